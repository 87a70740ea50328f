// Owns one load run end to end: set-up over REST, the worker threads, live progress, the drain and delivery check, the reports, and clean-up.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { mergeEncoded } from './histograms.js';
import { htmlReport } from './html.js';
import { planClients, type ClientResult, type FromWorker, type IntervalFigures, type ToWorker, type WorkerPlan } from './plan.js';
import { scrape, serverMetrics } from './prometheus.js';
import { REPORT_FORMAT, buildDelivery, buildPhases, sumMatching, textSummary, type LoadReport } from './report.js';
import { addUsers, createOrganization, deleteOrganization, mintToken, networkReason, type RestAuth } from './rest-client.js';
import { durationSeconds, needsRest, type Scenario } from './scenario.js';
import { nowMs } from './scheduler.js';
import type { SyncTarget, TargetKind } from './sync-client.js';

export interface RunOptions {
  readonly url: string;
  readonly kind: TargetKind;
  readonly scenario: Scenario;
  /** Plait API key and its auth token (required for a Plait target). */
  readonly apiKey?: string;
  readonly authToken?: string;
  readonly workers?: number;
  readonly seed?: number;
  /** Keep the organization, documents, comments and users the run made. */
  readonly keep?: boolean;
  /** Where report.json and report.html go (none written when absent). */
  readonly outDir?: string;
  /** Where `/metrics` is scraped (default: the target URL + /metrics). */
  readonly metricsUrl?: string;
  /** How long the end waits for every reader to hold every edit. */
  readonly drainTimeoutMs?: number;
  readonly intervalMs?: number;
  /** Wall-clock time (ms since the epoch) to start at, so several generator machines start one scenario together. */
  readonly startAtEpochMs?: number;
  /** Progress and warnings (default: stderr). */
  readonly log?: (line: string, live?: boolean) => void;
  /** Ends the schedule early (Ctrl-C): the run still drains, reports and cleans up. */
  readonly signal?: AbortSignal;
}

export interface RunResult {
  readonly report: LoadReport;
  /** Per-client outcomes (the delivery check's raw material). */
  readonly clients: readonly ClientResult[];
  readonly sentPerDoc: readonly number[];
  readonly files: ReportFiles | Record<string, never>;
}

export interface ReportFiles {
  readonly json: string;
  readonly html: string;
  readonly summary: string;
}

/** Writes report.json, report.html and summary.txt into `outDir`. */
export function writeReport(report: LoadReport, outDir: string): ReportFiles {
  mkdirSync(outDir, { recursive: true });
  const files = { json: join(outDir, 'report.json'), html: join(outDir, 'report.html'), summary: join(outDir, 'summary.txt') };
  writeFileSync(files.json, `${JSON.stringify(report, null, 1)}\n`);
  writeFileSync(files.html, htmlReport(report));
  writeFileSync(files.summary, `${textSummary(report)}\n`);
  return files;
}

const SATURATED = 0.9;

const workerUrl = (): URL => new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/**
 * The compiled build runs worker.js directly. From the sources (tests, `npm run dev`-style use) the worker is
 * TypeScript: a small eval'd entry registers tsx in the thread first (Node 20 does not apply an inherited
 * `--import=tsx` to a worker's entry module).
 */
function startWorker(plan: WorkerPlan): Worker {
  const url = workerUrl();
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData: plan });
  const entry = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); })`;
  return new Worker(entry, { eval: true, workerData: plan });
}

/** Fails fast, with the reason, when nothing answers at the URL (any HTTP answer, even 404 or 426, will do). */
async function reachable(url: string): Promise<void> {
  try {
    const response = await fetch(url.replace(/^ws/, 'http'), { signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
  } catch (error) {
    throw new Error(`nothing answers at ${url}: ${networkReason(error)}`);
  }
}

let liveLines = 0;

/** A terminal gets the live line redrawn in place; a log file gets every tenth one. */
function defaultLog(line: string, live = false): void {
  if (live && process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${line}`);
  else if (!live) process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[2K' : ''}${line}\n`);
  else if (line !== '' && liveLines++ % 10 === 0) process.stderr.write(`${line}\n`);
}

async function inBatches<T>(items: readonly T[], size: number, each: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

export async function runLoad(options: RunOptions): Promise<RunResult> {
  const log = options.log ?? defaultLog;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const runId = `load-${Date.now().toString(36)}-${seed.toString(36)}`;
  // one point a second, coarser for long runs so a report keeps at most ~600 points
  const intervalMs = options.intervalMs ?? Math.max(1, Math.ceil(durationSeconds(options.scenario) / 600)) * 1000;
  const warnings: string[] = [];
  let scenario = options.scenario;
  if (options.kind !== 'plait' && needsRest(scenario)) {
    warnings.push(`${options.kind} has no Plait REST API: the comments and REST workloads are left out`);
    const { comments: _comments, rest: _rest, ...syncOnly } = scenario;
    scenario = syncOnly;
  }
  const duration = durationSeconds(scenario);
  let auth: RestAuth | undefined;
  const target: SyncTarget = { kind: options.kind, url: options.url, ...(options.kind === 'plait' ? { organizationId: runId, editorId: 'main' } : {}) };
  const clients = planClients(scenario, runId, seed);

  if (options.kind !== 'plait') await reachable(options.url);
  if (options.kind === 'plait') {
    if (options.apiKey === undefined || options.authToken === undefined) throw new Error('a Plait target needs --api-key and --auth-token');
    auth = { url: options.url.replace(/^ws/, 'http'), apiKey: options.apiKey, authToken: options.authToken };
    log(`setting up: organization ${runId}, ${clients.length} users and their tokens`);
    await createOrganization(auth, runId, `plait-load ${scenario.name}`);
    const restAuth = auth;
    try {
      await addUsers(restAuth, runId, clients.map((client) => ({ userId: client.userId, viewer: client.role === 'reader' || client.role === 'late' })));
      await inBatches(clients, 16, async (client) => {
        const viewer = client.role === 'reader' || client.role === 'late' ? `${runId}-d${client.doc}` : undefined;
        client.token = await mintToken(restAuth, client.userId, runId, viewer);
      });
    } catch (error) {
      if (options.keep !== true) await deleteOrganization(restAuth, runId).catch(() => log(`clean-up failed, organization ${runId} is left behind`));
      throw error;
    }
  }
  const metricsUrl = options.metricsUrl ?? `${options.url.replace(/^ws/, 'http').replace(/\/+$/, '')}/metrics`;
  const before = await scrape(metricsUrl);

  const workerCount = Math.max(1, Math.min(options.workers ?? Math.max(1, availableParallelism() - 1), Math.max(1, clients.length)));
  const started = new Date();
  const intervals: IntervalFigures[] = [];
  const stopped = new Map<number, number[]>();
  const drained = new Map<number, { clients: ClientResult[]; errors: string[] }>();
  const saturated = new Set<number>();
  const waiters: Array<() => void> = [];
  let failure: Error | undefined;
  const wake = (): void => {
    for (const waiter of waiters.splice(0)) waiter();
  };
  const until = (check: () => boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const probe = (): void => {
        if (failure !== undefined) reject(failure);
        else if (check()) resolve();
        else waiters.push(probe);
      };
      probe();
    });
  let ready = 0;
  const workers = Array.from({ length: workerCount }, (_, workerId) => {
    const plan: WorkerPlan = {
      workerId,
      workers: workerCount,
      runId,
      seed,
      scenario,
      target,
      ...(auth === undefined ? {} : { rest: auth }),
      clients: clients.filter((client) => client.id % workerCount === workerId),
      intervalMs,
    };
    const worker = startWorker(plan);
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'ready') ready++;
      else if (message.type === 'interval') {
        intervals.push(message.figures);
        if (message.figures.elu > SATURATED && !saturated.has(message.workerId)) {
          saturated.add(message.workerId);
          const warning = `generator thread ${message.workerId} saturated (event loop ${(message.figures.elu * 100).toFixed(0)}% busy at ${(((message.figures.index + 1) * intervalMs) / 1000).toFixed(0)} s): its latency figures include generator delay; use more --workers or more machines`;
          warnings.push(warning);
          log(`warning: ${warning}`);
        }
      } else if (message.type === 'stopped') stopped.set(message.workerId, message.sentPerDoc);
      else if (message.type === 'drained') drained.set(message.workerId, { clients: message.clients, errors: message.errors });
      else failure = new Error(`generator thread ${message.workerId} failed: ${message.message}`);
      wake();
    });
    worker.on('error', (error) => {
      failure = error;
      wake();
    });
    return worker;
  });
  const send = (message: ToWorker): void => {
    for (const worker of workers) worker.postMessage(message);
  };
  let progressTimer: NodeJS.Timeout | undefined;
  try {
    await until(() => ready === workerCount);
    if (options.startAtEpochMs !== undefined) {
      const wait = options.startAtEpochMs - Date.now();
      if (wait < 0) warnings.push(`started ${(-wait / 1000).toFixed(1)} s after the agreed --start-at`);
      else log(`waiting ${(wait / 1000).toFixed(1)} s for --start-at`);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
    }
    const startAt = nowMs() + 100;
    send({ type: 'start', startAt });
    log(`running ${scenario.name}: ${clients.length} sync clients on ${workerCount} threads for ${duration} s against ${options.kind} ${options.url}`);
    const mainElu = performance.eventLoopUtilization();
    progressTimer = setInterval(() => log(progressLine(intervals, workerCount, intervalMs, duration, scenario.rampUpSeconds), true), 1000);
    let stoppedEarly = false;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, startAt + duration * 1000 - nowMs()));
      options.signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        stoppedEarly = true;
        warnings.push(`stopped early, at ${((nowMs() - startAt) / 1000).toFixed(1)} s of ${duration} s`);
        resolve();
      });
    });
    clearInterval(progressTimer);
    const ranFor = stoppedEarly ? Math.min(duration, Math.max(0, (nowMs() - startAt) / 1000)) : duration;
    const coordinatorElu = performance.eventLoopUtilization(mainElu).utilization;
    if (coordinatorElu > SATURATED) warnings.push(`the coordinating thread was ${(coordinatorElu * 100).toFixed(0)}% busy`);
    log('', true);
    log('sending stopped; waiting for answers in flight and for every reader to catch up');
    send({ type: 'stop', early: stoppedEarly });
    await until(() => stopped.size === workerCount);
    const sentPerDoc = new Array<number>(scenario.documents).fill(0);
    for (const perDoc of stopped.values()) perDoc.forEach((n, doc) => (sentPerDoc[doc] = (sentPerDoc[doc] ?? 0) + n));
    send({ type: 'drain', sentPerDoc, timeoutMs: options.drainTimeoutMs ?? 30_000 });
    await until(() => drained.size === workerCount);
    send({ type: 'close' });
    const after = await scrape(metricsUrl);
    if (auth !== undefined && options.keep !== true) {
      try {
        await deleteOrganization(auth, runId);
      } catch (error) {
        warnings.push(`clean-up failed, organization ${runId} is left behind: ${(error as Error).message}`);
      }
    }
    const results = [...drained.values()].flatMap((d) => d.clients).sort((a, b) => a.id - b.id);
    const { series, all, steady } = buildPhases(intervals, intervalMs, scenario.rampUpSeconds, Math.max(ranFor, Math.min(duration, scenario.rampUpSeconds)));
    const report: LoadReport = {
      format: REPORT_FORMAT,
      scenario,
      target: { kind: options.kind, url: options.url },
      machines: [{ host: hostname(), runId, workers: workerCount, startedAt: started.toISOString() }],
      intervalSeconds: intervalMs / 1000,
      phases: { all, steady },
      series,
      delivery: buildDelivery(sentPerDoc, results),
      errors: [...drained.values()].flatMap((d) => d.errors),
      warnings,
      server: serverMetrics(metricsUrl, before.samples, after),
    };
    const files = options.outDir === undefined ? {} : writeReport(report, options.outDir);
    return { report, clients: results, sentPerDoc, files };
  } catch (error) {
    if (auth !== undefined && options.keep !== true) {
      await deleteOrganization(auth, runId).catch((cleanup: unknown) => log(`clean-up failed, organization ${runId} is left behind: ${(cleanup as Error).message}`));
    }
    throw error;
  } finally {
    clearInterval(progressTimer);
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toPrecision(3)}ms`);

/** The live line: where the run is, rates and percentiles of the last few seconds. */
function progressLine(intervals: readonly IntervalFigures[], workers: number, intervalMs: number, duration: number, ramp: number): string {
  const last = Math.max(-1, ...intervals.map((f) => f.index));
  const window = intervals.filter((f) => f.index > last - 3 && f.index <= last);
  const seconds = (Math.min(3, last + 1) * intervalMs) / 1000 || 1;
  const counters: Record<string, number> = {};
  for (const f of window) for (const [k, v] of Object.entries(f.counters)) counters[k] = (counters[k] ?? 0) + v;
  const latest = intervals.filter((f) => f.index === last);
  const open = latest.reduce((sum, f) => sum + (f.gauges['connections.open'] ?? 0), 0);
  const e2e = mergeEncoded(window.map((f) => f.histograms['sync.e2e']));
  const restHist = mergeEncoded(window.flatMap((f) => Object.entries(f.histograms).filter(([k]) => k.startsWith('rest.')).map(([, v]) => v)));
  const elu = Math.max(0, ...latest.map((f) => f.elu));
  const t = ((last + 1) * intervalMs) / 1000;
  const width = 20;
  const done = Math.min(width, Math.round((t / duration) * width));
  const rate = (n: number | undefined): string => ((n ?? 0) / seconds).toFixed(0);
  return (
    `[${'#'.repeat(done)}${'.'.repeat(width - done)}] ${t.toFixed(0)}/${duration} s ${t < ramp ? 'ramp-up' : 'steady'} | conns ${open}` +
    ` | edits ${rate(counters['edits.sent'])}/s recv ${rate(counters['edits.received'])}/s p50 ${ms(e2e.p50)} p99 ${ms(e2e.p99)} p99.9 ${ms(e2e.p999)}` +
    ` | REST ${rate(sumMatching(counters, /^rest\..*\.sent$/))}/s p99 ${ms(restHist.p99)} | errors ${counters['errors'] ?? 0} reconnects ${counters['sync.reconnects'] ?? 0}` +
    ` | gen ${(elu * 100).toFixed(0)}% of ${workers} threads`
  );
}

export { textSummary };
