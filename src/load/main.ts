#!/usr/bin/env node
// Owns the plait-load command line: `run` (default) against a deployment, and `merge` of several generator machines' reports.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { mergeReports, textSummary, type LoadReport } from './report.js';
import { runLoad, writeReport } from './run.js';
import { resolveScenario, type ScenarioPatch } from './scenario.js';
import { TARGET_KINDS, type TargetKind } from './sync-client.js';

export const USAGE = `plait-load: load-test a running Plait (or any y-websocket-compatible server)

  plait-load [run] --url http://host:8080 --api-key KEY --auth-token TOKEN [options]
  plait-load merge machine-a/report.json machine-b/report.json [--out DIR]

target
  --url URL              the deployment (http(s):// or ws(s)://)                       (required)
  --api-key KEY          Plait API key                               (env PLAIT_API_KEY)
  --auth-token TOKEN     its auth token                              (env PLAIT_AUTH_TOKEN)
  --target KIND          plait | y-websocket | hocuspocus                            (plait)
  --metrics-url URL      where the server's Prometheus figures are   (URL/metrics)
scenario (presets combine with +; a file and the flags below override fields)
  --scenario NAMES       editing, readers, presence, comments, rest, collaboration, smoke
                                                                        (collaboration)
  --scenario-file FILE   a JSON scenario (see docs/load-testing.md)
  --docs N  --ramp-up S  --duration S (steady phase)  --arrivals uniform|poisson
  --editors N  --edit-rate R (per editor /s)  --text-size MIN-MAX
  --readers N  --late-joiners N  --late-join-at S
  --presence-rate R  --churn-rate R  --churn-hold S
  --comment-rate R (threads /s)  --replies N  --reply-every S
  --rest-rate R (requests /s)
run
  --workers N            generator threads                        (cores - 1)
  --seed N               same seed, same schedule
  --out DIR              report.json and report.html              (./plait-load-<time>)
  --keep                 keep the organization, documents and comments the run made
  --drain-timeout S      how long the end waits for readers to catch up   (30)
  --start-at TIME        ISO time to start at (several machines, one scenario)

Exit status: 0 done, 1 could not run, 2 some client did not receive every edit.`;

export const FLAGS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  'auth-token': { type: 'string' },
  target: { type: 'string' },
  'metrics-url': { type: 'string' },
  scenario: { type: 'string' },
  'scenario-file': { type: 'string' },
  docs: { type: 'string' },
  'ramp-up': { type: 'string' },
  duration: { type: 'string' },
  arrivals: { type: 'string' },
  editors: { type: 'string' },
  'edit-rate': { type: 'string' },
  'text-size': { type: 'string' },
  readers: { type: 'string' },
  'late-joiners': { type: 'string' },
  'late-join-at': { type: 'string' },
  'presence-rate': { type: 'string' },
  'churn-rate': { type: 'string' },
  'churn-hold': { type: 'string' },
  'comment-rate': { type: 'string' },
  replies: { type: 'string' },
  'reply-every': { type: 'string' },
  'rest-rate': { type: 'string' },
  workers: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string' },
  keep: { type: 'boolean' },
  'drain-timeout': { type: 'string' },
  'start-at': { type: 'string' },
  help: { type: 'boolean' },
} as const;

type Values = Record<string, string | boolean | undefined>;

function number(values: Values, name: string): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(value)) throw new Error(`--${name} must be a number, got "${String(raw)}"`);
  return value;
}

/** The scenario patch the flags describe (only the fields given). */
export function flagPatch(values: Values): ScenarioPatch {
  const n = (name: string): number | undefined => number(values, name);
  const section = <T extends object>(fields: T): T | undefined => {
    const given = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    return Object.keys(given).length === 0 ? undefined : (given as T);
  };
  let textSize: { min: number; max: number } | undefined;
  const size = values['text-size'];
  if (typeof size === 'string') {
    const [min = NaN, max = min] = size.split('-').map(Number);
    if (!Number.isFinite(min) || !Number.isFinite(max)) throw new Error(`--text-size must be N or MIN-MAX, got "${size}"`);
    textSize = { min, max };
  }
  const patch: Record<string, unknown> = {
    documents: n('docs'),
    rampUpSeconds: n('ramp-up'),
    steadySeconds: n('duration'),
    arrivals: values['arrivals'],
    editing: section({ editorsPerDocument: n('editors'), editsPerSecond: n('edit-rate'), textSize }),
    readers: section({ perDocument: n('readers'), lateJoinersPerDocument: n('late-joiners'), lateJoinAtSeconds: n('late-join-at') }),
    presence: section({ updatesPerSecond: n('presence-rate'), churnPerSecond: n('churn-rate'), churnHoldSeconds: n('churn-hold') }),
    comments: section({ threadsPerSecond: n('comment-rate'), repliesPerThread: n('replies'), replyEverySeconds: n('reply-every') }),
    rest: section({ requestsPerSecond: n('rest-rate') }),
  };
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as ScenarioPatch;
}

async function run(values: Values): Promise<number> {
  const url = values['url'];
  if (typeof url !== 'string') throw new Error('--url is required (the deployment to load, e.g. --url http://127.0.0.1:8080)');
  if (!/^(https?|wss?):\/\/[^/]/.test(url)) throw new Error(`--url must start with http://, https://, ws:// or wss:// (got "${url}")`);
  const kind = (values['target'] ?? 'plait') as TargetKind;
  if (!(TARGET_KINDS as readonly string[]).includes(kind)) throw new Error(`--target must be one of ${TARGET_KINDS.join(', ')}`);
  const file = values['scenario-file'];
  const fromFile = typeof file === 'string' ? (JSON.parse(readFileSync(file, 'utf8')) as ScenarioPatch) : undefined;
  const names = typeof values['scenario'] === 'string' ? values['scenario'].split('+').filter((s) => s !== '') : fromFile === undefined ? ['collaboration'] : [];
  const scenario = resolveScenario(names, [...(fromFile === undefined ? [] : [fromFile]), flagPatch(values)]);
  const outDir = typeof values['out'] === 'string' ? values['out'] : `plait-load-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const apiKey = (values['api-key'] as string | undefined) ?? process.env['PLAIT_API_KEY'];
  const authToken = (values['auth-token'] as string | undefined) ?? process.env['PLAIT_AUTH_TOKEN'];
  const workers = number(values, 'workers');
  const seed = number(values, 'seed');
  const drain = number(values, 'drain-timeout');
  const metricsUrl = values['metrics-url'];
  const startAt = typeof values['start-at'] === 'string' ? Date.parse(values['start-at']) : undefined;
  if (startAt !== undefined && Number.isNaN(startAt)) throw new Error(`--start-at must be an ISO time (2026-01-31T12:00:00Z), got "${String(values['start-at'])}"`);
  // Ctrl-C ends the schedule early; the run still drains, reports and cleans up. A second one exits at once.
  const stop = new AbortController();
  process.once('SIGINT', () => {
    process.stderr.write('\nstopping early (Ctrl-C again to quit without report or clean-up)\n');
    stop.abort();
    process.once('SIGINT', () => process.exit(130));
  });
  const result = await runLoad({
    signal: stop.signal,
    url,
    kind,
    scenario,
    outDir,
    keep: values['keep'] === true,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(authToken === undefined ? {} : { authToken }),
    ...(workers === undefined ? {} : { workers }),
    ...(seed === undefined ? {} : { seed }),
    ...(drain === undefined ? {} : { drainTimeoutMs: drain * 1000 }),
    ...(typeof metricsUrl === 'string' ? { metricsUrl } : {}),
    ...(startAt === undefined ? {} : { startAtEpochMs: startAt }),
  });
  process.stdout.write(`\n${textSummary(result.report)}\n\nreports: ${result.files.json ?? ''} ${result.files.html ?? ''} ${result.files.summary ?? ''}\n`);
  return result.report.delivery.complete < result.report.delivery.clients ? 2 : 0;
}

/** `merge`: one report (JSON, HTML, summary) of several machines' JSON reports. */
export function mergeFiles(files: readonly string[], outDir: string): LoadReport {
  const merged = mergeReports(files.map((file) => JSON.parse(readFileSync(file, 'utf8')) as LoadReport));
  writeReport(merged, outDir);
  return merged;
}

export async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], options: FLAGS, strict: true, allowPositionals: true });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [command = 'run', ...rest] = positionals;
  if (command === 'merge') {
    const outDir = values.out ?? 'plait-load-merged';
    const merged = mergeFiles(rest, outDir);
    process.stdout.write(`${textSummary(merged)}\n\nreports: ${join(outDir, 'report.json')} ${join(outDir, 'report.html')}\n`);
    return 0;
  }
  if (command !== 'run' || rest.length > 0) throw new Error(`unknown command "${positionals.join(' ')}" (run or merge; --help)`);
  return run(values);
}

const invoked = process.argv[1] ?? '';
if (/[/\\]load[/\\]main\.(ts|js)$/.test(invoked) || invoked.endsWith('plait-load')) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`plait-load: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
