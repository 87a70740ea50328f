// Owns `npm run bench`: runs every benchmark script as its own process, then prints the summary table and writes the results.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { flags, main } from './lib/cli.js';
import { parseFigures, progress, type Figure } from './lib/report.js';
import { writeResults, type ScriptRun } from './lib/results.js';
import { textTable } from './lib/table.js';

const USAGE = `node --import=tsx bench/run-all.ts [flags]   (npm run bench)
  --only a,b     run only these steps: ${'fanout-50, fanout-500, fanout-docs, durability, memory, join, load, rest, listing, delivery, cluster'}
  --quick        much smaller sizes (a smoke run of the harness, not figures to quote)
  --profile      profile the Plait server in the fan-out and REST steps (summaries on stderr)
Every step is also a script of its own: see bench/README.md.`;

interface Step {
  readonly name: string;
  readonly script: string;
  readonly args: readonly string[];
  readonly quick: readonly string[];
  readonly profiles: boolean;
}

/** Default sizes keep the whole run near ten minutes on a 2-core machine; each script takes flags for bigger runs. */
const STEPS: readonly Step[] = [
  {
    name: 'fanout-50',
    script: 'fanout.ts',
    // The same 10,000 updates per closed-loop phase on every server (a server that runs faster would otherwise grow a
    // larger document, whose GC and compaction cost more per update), and the floor with Plait's codec and update log
    // beside the bare floor: what the floor costs once it keeps the guarantees Plait must (bench/README.md, "Eleventh session").
    args: ['--readers', '50', '--rate', '100', '--latency-ms', '10000', '--rounds', '2', '--burst-updates', '10000', '--server', 'plait,hocuspocus,y-websocket,floor,floor-checked-logged'],
    quick: ['--readers', '10', '--latency-ms', '1000', '--throughput-ms', '1000', '--warmup-ms', '500'],
    profiles: true,
  },
  {
    name: 'fanout-500',
    script: 'fanout.ts',
    // the p99 target row: three interleaved rounds, median reported (the machine is shared and noisy)
    args: ['--readers', '500', '--rate', '20', '--latency-ms', '10000', '--rounds', '3'],
    quick: ['--readers', '50', '--rate', '20', '--latency-ms', '1000', '--throughput-ms', '1000', '--warmup-ms', '500'],
    profiles: true,
  },
  {
    name: 'fanout-docs',
    script: 'fanout.ts',
    // The same content on every server (2,500 updates per document and phase), so the memory rows compare equal
    // documents; Plait without its log beside it separates what the log's native memory adds.
    args: ['--docs', '20', '--readers', '9', '--rate', '10', '--burst-updates', '2500', '--server', 'plait,hocuspocus,y-websocket,floor,plait-nopersist'],
    quick: ['--docs', '4', '--readers', '3', '--rate', '10', '--latency-ms', '1000', '--throughput-ms', '1000', '--warmup-ms', '500'],
    profiles: false,
  },
  { name: 'durability', script: 'durability.ts', args: [], quick: ['--latency-ms', '1000', '--throughput-ms', '1000', '--warmup-ms', '500'], profiles: false },
  { name: 'memory', script: 'memory.ts', args: [], quick: ['--small-docs', '30', '--large-docs', '2'], profiles: false },
  { name: 'join', script: 'join.ts', args: [], quick: ['--bytes', '262144', '--joins', '2', '--rounds', '1', '--edits', '2'], profiles: true },
  { name: 'load', script: 'load.ts', args: [], quick: ['--small-docs', '3', '--large-docs', '1'], profiles: true },
  { name: 'rest', script: 'rest.ts', args: [], quick: ['--duration', '1', '--warmup', '0', '--floor-batches', '20'], profiles: true },
  { name: 'listing', script: 'listing.ts', args: [], quick: ['--docs', '300', '--pages', '3'], profiles: false },
  { name: 'delivery', script: 'delivery.ts', args: [], quick: ['--events', '100', '--pending', '100', '--held', '200', '--writes', '50', '--activities', '1000', '--fanout', '100'], profiles: false },
  // Skipped, saying so, when nats-server is missing.
  { name: 'cluster', script: 'cluster.ts', args: [], quick: ['--docs', '8', '--readers', '2', '--seconds', '2', '--latency-docs', '4', '--latency-seconds', '2'], profiles: false },
];

const STEP_TIMEOUT_MS = 8 * 60_000;
const BENCH_DIR = fileURLToPath(new URL('./', import.meta.url));

/** Runs one script; its stderr (progress) passes through, its stdout is kept for the figure lines. */
function runStep(step: Step, args: readonly string[]): Promise<ScriptRun & { figures: Figure[] }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import=tsx', `${BENCH_DIR}${step.script}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    const timer = setTimeout(() => {
      progress(`${step.name}: still running after ${STEP_TIMEOUT_MS / 60_000} min, stopping it`);
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 5000).unref();
    }, STEP_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const figures = parseFigures(stdout);
      resolve({ step: step.name, script: step.script, args: [...args], seconds: (Date.now() - started) / 1000, exitCode: code ?? -1, signal: signal ?? undefined, figures });
    });
  });
}

main(async () => {
  const values = flags(USAGE, { only: { type: 'string' }, quick: { type: 'boolean' } });
  const only = typeof values['only'] === 'string' ? values['only'].split(',').map((s) => s.trim()) : undefined;
  for (const name of only ?? []) if (!STEPS.some((s) => s.name === name)) throw new Error(`unknown step "${name}" in --only`);
  const steps = STEPS.filter((s) => only === undefined || only.includes(s.name));
  const startedAt = new Date();
  const runs: ScriptRun[] = [];
  const figures: Figure[] = [];
  for (const step of steps) {
    const args = [...(values['quick'] === true ? step.quick : step.args), ...(values['profile'] === true && step.profiles ? ['--profile'] : [])];
    progress(`== ${step.name}: node --import=tsx bench/${step.script} ${args.join(' ')}`);
    const run = await runStep(step, args);
    const { figures: stepFigures, ...summary } = run;
    runs.push(summary);
    figures.push(...stepFigures);
    progress(`== ${step.name}: ${run.exitCode === 0 ? 'done' : `FAILED (exit ${run.exitCode}${run.signal === undefined ? '' : `, ${run.signal}`})`} in ${Math.round(run.seconds)} s`);
  }
  const failed = runs.filter((r) => r.exitCode !== 0);
  const written = writeResults({ startedAt, runs, figures, quick: values['quick'] === true });
  process.stdout.write(`\n${textTable(figures)}\n\n`);
  if (failed.length > 0) process.stdout.write(`FAILED steps: ${failed.map((r) => r.step).join(', ')} (their figures are missing or partial)\n`);
  process.stdout.write(`figures: ${written.json}\n`);
  process.stdout.write(written.markdown === undefined ? 'bench/results/latest.md left as is (partial, failed or --quick run)\n' : `table:   ${written.markdown}\n`);
  if (failed.length > 0) process.exitCode = 1;
});
