// Owns the result files: bench/results/<timestamp>.json (every figure plus the run's context) and bench/results/latest.md.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TARGETS, verdict, type Figure } from './report.js';
import { markdownTable } from './table.js';

export interface ScriptRun {
  readonly step: string;
  readonly script: string;
  readonly args: readonly string[];
  readonly seconds: number;
  readonly exitCode: number;
  readonly signal: string | undefined;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RESULTS = join(ROOT, 'bench', 'results');
const PACKAGES = ['@hocuspocus/server', '@hocuspocus/provider', '@y/websocket-server', 'y-websocket', 'yjs', 'ws', 'uWebSockets.js', 'lmdb', 'autocannon'];

function version(name: string): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version?: string };
  return manifest.version ?? 'unknown';
}

function commit(): string {
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
  return dirty === '' ? head : `${head} (+ uncommitted src changes)`;
}

export function environment(): Record<string, unknown> {
  const cpu = cpus();
  return {
    node: process.version,
    cpus: cpu.length,
    cpuModel: cpu[0]?.model ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    commit: commit(),
    versions: Object.fromEntries(PACKAGES.map((name) => [name, version(name)])),
  };
}

/** Writes the JSON always; latest.md only for a complete default run (partial and --quick runs leave the committed table alone). */
export function writeResults(run: { startedAt: Date; runs: readonly ScriptRun[]; figures: readonly Figure[]; quick: boolean }): { json: string; markdown: string | undefined } {
  const stamp = run.startedAt.toISOString().replaceAll(':', '-').replace(/\.\d+Z$/, 'Z');
  const env = environment();
  const json = join(RESULTS, `${stamp}.json`);
  const targets = TARGETS.map((t) => ({ ...t, verdict: verdict(run.figures, t.bench, t.metric) }));
  writeFileSync(json, `${JSON.stringify({ startedAt: run.startedAt, finishedAt: new Date(), quick: run.quick, environment: env, runs: run.runs, targets, figures: run.figures }, null, 2)}\n`);
  const complete = !run.quick && run.runs.length > 0 && run.runs.every((r) => r.exitCode === 0) && run.runs.length >= 7;
  if (!complete) return { json, markdown: undefined };
  const markdown = join(RESULTS, 'latest.md');
  writeFileSync(markdown, renderMarkdown(run, env, stamp));
  return { json, markdown };
}

function renderMarkdown(run: { startedAt: Date; runs: readonly ScriptRun[]; figures: readonly Figure[]; quick: boolean }, env: Record<string, unknown>, stamp: string): string {
  const versions = env['versions'] as Record<string, string>;
  const lines = [
    '# Benchmark results',
    '',
    `Run ${stamp} with \`npm run bench\`${run.quick ? ' --quick (smoke sizes, not for quoting)' : ''}, commit ${String(env['commit'])}.`,
    `Machine: ${String(env['cpus'])} × ${String(env['cpuModel'])}, ${String(env['memoryGiB'])} GiB, Node ${String(env['node'])}, load average at the end ${JSON.stringify(env['loadAverage'])}.`,
    `Peers: @hocuspocus/server ${versions['@hocuspocus/server'] ?? '?'} with @hocuspocus/provider ${versions['@hocuspocus/provider'] ?? '?'}; ` +
      `@y/websocket-server ${versions['@y/websocket-server'] ?? '?'} with y-websocket ${versions['y-websocket'] ?? '?'}; yjs ${versions['yjs'] ?? '?'}.`,
    '',
    'P/H, P/Y and P/ref are Plait ÷ peer. Lower is better for ms, µs, MB, KB and counts; higher for upd/s and req/s.',
    'What each row measures and the caveats: [bench/README.md](../README.md).',
    '',
    markdownTable(run.figures),
    '',
    '## Targets (issue 6)',
    '',
    ...TARGETS.map((t) => {
      const v = verdict(run.figures, t.bench, t.metric);
      return `- ${t.bench}, ${t.metric}: ${t.text} — ${v === undefined ? 'not measured' : `${v.met ? 'MET' : 'MISSED'} (${v.detail})`}`;
    }),
    '',
    '## Steps',
    '',
    ...run.runs.map((r) => `- \`bench/${r.script} ${r.args.join(' ')}\`: ${r.exitCode === 0 ? 'ok' : `FAILED (exit ${r.exitCode})`}, ${Math.round(r.seconds)} s`),
    '',
  ];
  return lines.join('\n');
}
