// Owns the sync fan-out workload: one writer and N readers on each of M documents, a fixed-rate latency phase and a closed-loop throughput phase.
import { performance } from 'node:perf_hooks';
import type * as Y from 'yjs';
import { connectMany, syncTarget, within, type SyncClient } from './clients.js';
import type { ProcessStats } from './host.js';
import { launchServer, type ServerKind } from './launch.js';
import { sampleRss } from './proc.js';
import { Samples, summarize, type Summary } from './stats.js';

export interface FanoutOptions {
  readonly server: ServerKind;
  /** M: documents, each with one writer. */
  readonly docs: number;
  /** N: readers per document. */
  readonly readers: number;
  /** Updates per second per document in the latency phase (open loop, fixed schedule). */
  readonly rate: number;
  readonly latencyMs: number;
  /** Closed-loop phase: each writer keeps at most `window` updates not yet received by all its readers. 0 ms skips it. */
  readonly throughputMs: number;
  readonly window: number;
  /** Characters of text inserted per update (same for every server). */
  readonly payload: number;
  readonly warmup: number;
  /**
   * An unmeasured closed-loop phase of this length before the measured phases (0: none). V8 compiles a server's hot
   * functions with TurboFan on helper threads the first time a path gets hot; measured without it, a phase carries the
   * one-time compilation of the paths it is first to heat (bench/README.md, "V8 was still compiling inside the measured phases").
   */
  readonly warmupMs: number;
  /**
   * Count, not time: the closed-loop warm-up and the closed-loop phase each run until every document has this many more
   * updates delivered (at most a minute each), so every server holds the same content when memory is read after the
   * burst. Absent: each runs for its time, as `npm run bench` does (a faster server then holds more).
   */
  readonly burstUpdates?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly cpuProfileDir?: string;
}

export interface PhaseFigures {
  readonly updates: number;
  readonly deliveries: number;
  readonly seconds: number;
  readonly updatesPerSec: number;
  readonly deliveriesPerSec: number;
  readonly serverCpuMicrosPerDelivery: number;
  /** Server CPU use over the phase, in cores (1 = one core busy). */
  readonly serverCores: number;
  /** Share of the server's CPU spent in the kernel. */
  readonly serverSystemShare: number;
  /** The share of server CPU spent on the main thread (coarse: 10 ms ticks); the rest is other threads. */
  readonly serverMainThreadShare: number;
  /** Bytes the server caused to be written to storage over the phase, per update (NaN off Linux). */
  readonly serverDiskBytesPerUpdate: number;
  readonly clientCores: number;
  /** Deliveries still missing when the phase's drain wait ended. */
  readonly missing: number;
}

export interface FanoutResult {
  readonly options: FanoutOptions;
  readonly connectMs: number;
  readonly latency: Summary;
  readonly latencyPhase: PhaseFigures;
  readonly throughputPhase: PhaseFigures | undefined;
  readonly peakRss: number;
  readonly endRss: number;
  /** After both phases, clients still connected, after a full GC (--expose-gc): what the server keeps after a burst. */
  readonly afterBurst: { readonly rss: number; readonly rssAnon: number; readonly js: number };
  readonly disconnects: number;
  /** Close codes/reasons of the first client drops. */
  readonly closes: readonly string[];
}

const DRAIN_TIMEOUT_MS = 15_000;
const THROUGHPUT_CAP = 500_000;
/** A closed loop counted in updates (`burstUpdates`) ends here at the latest. */
const COUNTED_LOOP_MAX_MS = 60_000;

interface DocRun {
  readonly writer: SyncClient;
  readonly readers: SyncClient[];
  readonly sendTimes: Float64Array;
  readonly received: Uint16Array;
  seq: number;
  /** Every update up to this seq has reached every reader. */
  acked: number;
}

/** Builds one document's writer/reader bookkeeping; readers record latency for seq ≥ `recordFrom()`. */
function track(
  writer: SyncClient,
  readers: SyncClient[],
  capacity: number,
  onDelivery: (run: DocRun, seq: number, at: number) => void,
  onAck: () => void,
): DocRun {
  const run: DocRun = { writer, readers, sendTimes: new Float64Array(capacity + 1), received: new Uint16Array(capacity + 1), seq: 0, acked: 0 };
  for (const reader of readers) {
    let last = 0;
    const meta = reader.doc.getMap<number>('bench');
    reader.doc.on('update', () => {
      const seq = meta.get('seq') ?? 0;
      if (seq <= last) return;
      const at = performance.now();
      // servers may coalesce updates: every seq up to the newest one has arrived now
      for (let s = last + 1; s <= seq; s++) {
        onDelivery(run, s, at);
        const count = (run.received[s] ?? 0) + 1;
        run.received[s] = count;
        if (count === readers.length && s === run.acked + 1) {
          while (run.acked < run.seq && run.received[run.acked + 1] === readers.length) run.acked++;
          onAck();
        }
      }
      last = seq;
    });
  }
  return run;
}

function send(run: DocRun, text: Y.Text, meta: Y.Map<number>, payload: string): void {
  if (run.seq + 1 >= run.sendTimes.length) throw new Error('update capacity exceeded');
  const seq = ++run.seq;
  run.sendTimes[seq] = performance.now();
  run.writer.doc.transact(() => {
    text.insert(text.length, payload);
    meta.set('seq', seq);
  });
}

async function drain(runs: readonly DocRun[]): Promise<number> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while (Date.now() < deadline && runs.some((run) => run.acked < run.seq)) await new Promise((resolve) => setTimeout(resolve, 5));
  let missing = 0;
  for (const run of runs) for (let s = run.acked + 1; s <= run.seq; s++) missing += run.readers.length - (run.received[s] ?? 0);
  return missing;
}

/**
 * Closed loop for `ms`: each writer keeps at most `window` updates not yet received by all its readers, refilled as
 * soon as an update has reached every reader (at most once per microtask turn); then waits for the drain and returns
 * the deliveries still missing. `setOnAck` installs the refill for the duration.
 */
async function closedLoop(runs: readonly DocRun[], ms: number, window: number, sendOn: (d: number) => void, setOnAck: (listener: () => void) => void, perDoc?: number): Promise<number> {
  const limitMs = perDoc === undefined ? ms : COUNTED_LOOP_MAX_MS;
  const end = performance.now() + limitMs;
  const cap = runs.map((run) => run.seq + (perDoc ?? Math.floor(THROUGHPUT_CAP / runs.length)));
  let reached: () => void = () => undefined;
  const allReached = new Promise<void>((resolve) => (reached = resolve));
  const pump = (): void => {
    if (perDoc !== undefined && runs.every((run, d) => run.acked >= (cap[d] ?? 0))) reached();
    if (performance.now() >= end) return;
    runs.forEach((run, d) => {
      while (run.seq - run.acked < window && run.seq < (cap[d] ?? 0)) sendOn(d);
    });
  };
  let scheduled = false;
  setOnAck(() => {
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      pump();
    });
  });
  pump();
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs)));
  await (perDoc === undefined ? timeUp : Promise.race([allReached, timeUp]));
  clearTimeout(timer);
  setOnAck(() => undefined);
  return drain(runs);
}

function phase(before: ProcessStats, after: ProcessStats, clientBefore: NodeJS.CpuUsage, updates: number, deliveries: number, ms: number, missing: number): PhaseFigures {
  const client = process.cpuUsage(clientBefore);
  const cpu = after.cpuMicros - before.cpuMicros;
  const seconds = ms / 1000;
  return {
    updates,
    deliveries,
    seconds,
    updatesPerSec: updates / seconds,
    deliveriesPerSec: deliveries / seconds,
    serverCpuMicrosPerDelivery: cpu / Math.max(1, deliveries),
    serverCores: cpu / 1e6 / seconds,
    serverSystemShare: (after.systemMicros - before.systemMicros) / Math.max(1, cpu),
    serverMainThreadShare: (after.mainThreadMicros - before.mainThreadMicros) / Math.max(1, cpu),
    serverDiskBytesPerUpdate: (after.diskWriteBytes - before.diskWriteBytes) / Math.max(1, updates),
    clientCores: (client.user + client.system) / 1e6 / seconds,
    missing,
  };
}

export async function runFanout(options: FanoutOptions, progress: (line: string) => void = () => undefined): Promise<FanoutResult> {
  const server = await launchServer(options.server, {
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.cpuProfileDir === undefined ? {} : { cpuProfileDir: options.cpuProfileDir }),
  });
  const rss = sampleRss(server.pid);
  const clients: SyncClient[] = [];
  try {
    const target = await syncTarget(server);
    const names = Array.from({ length: options.docs }, (_, d) => `fanout-${process.pid}-${d}`);
    const connectStart = performance.now();
    const readerNames = names.flatMap((name) => Array.from({ length: options.readers }, () => name));
    const readers = await connectMany(target, readerNames);
    clients.push(...readers);
    const writers = await connectMany(target, names);
    clients.push(...writers);
    const connectMs = performance.now() - connectStart;
    progress(`${options.server}: ${clients.length} clients synced in ${Math.round(connectMs)} ms (at ${(performance.now() / 1000).toFixed(1)} s)`);

    const latencyUpdates = Math.ceil((options.rate * options.latencyMs) / 1000);
    const capacity = options.warmup + latencyUpdates + 16 + Math.ceil((2 * THROUGHPUT_CAP) / options.docs);
    const latencies = new Samples();
    let recordFrom = Number.POSITIVE_INFINITY;
    let deliveries = 0;
    let onAck = (): void => undefined;
    const runs = names.map((_, d) =>
      track(writers[d] as SyncClient, readers.slice(d * options.readers, (d + 1) * options.readers), capacity, (run, seq, at) => {
        deliveries++;
        if (seq >= recordFrom) latencies.push(at - (run.sendTimes[seq] ?? at));
      }, () => onAck()),
    );
    const texts = runs.map((run) => run.writer.doc.getText('content'));
    const metas = runs.map((run) => run.writer.doc.getMap<number>('bench'));
    const payload = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(Math.ceil(options.payload / 36)).slice(0, options.payload);
    const sendOn = (d: number): void => send(runs[d] as DocRun, texts[d] as Y.Text, metas[d] as Y.Map<number>, payload);

    for (let i = 0; i < options.warmup; i++) for (let d = 0; d < runs.length; d++) sendOn(d);
    await drain(runs);
    if (options.warmupMs > 0) {
      const warmStart = performance.now();
      const missing = await closedLoop(runs, options.warmupMs, options.window, sendOn, (listener) => (onAck = listener), options.burstUpdates);
      progress(`${options.server}: ${Math.round(performance.now() - warmStart)} ms closed-loop warm-up done (unmeasured${missing > 0 ? `, ${missing} deliveries missing` : ''})`);
    }

    // latency phase: all documents on one fixed schedule, round robin
    const total = latencyUpdates * runs.length;
    const interval = 1000 / (options.rate * runs.length);
    recordFrom = options.warmup + 1;
    deliveries = 0;
    const before = await server.stats();
    const clientBefore = process.cpuUsage();
    const start = performance.now();
    await within(
      new Promise<void>((resolve) => {
        let sent = 0;
        const tick = (): void => {
          const now = performance.now();
          while (sent < total && start + sent * interval <= now) sendOn(sent++ % runs.length);
          if (sent >= total) resolve();
          else setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
        };
        tick();
      }),
      options.latencyMs * 3 + 10_000,
      'latency phase schedule',
    );
    const missingLatency = await drain(runs);
    const latencyElapsed = performance.now() - start;
    const latencyPhase = phase(before, await server.stats(), clientBefore, total, deliveries, latencyElapsed, missingLatency);
    const latency = summarize(latencies);
    recordFrom = Number.POSITIVE_INFINITY;
    progress(
      `${options.server}: latency p50 ${latency.p50.toFixed(2)} ms p99 ${latency.p99.toFixed(2)} ms max ${latency.max.toFixed(1)} ms, ` +
        `${latencyPhase.serverCpuMicrosPerDelivery.toFixed(2)} µs CPU/delivery, server ${latencyPhase.serverCores.toFixed(2)} cores (${Math.round(latencyPhase.serverSystemShare * 100)}% sys, ${Math.round(latencyPhase.serverMainThreadShare * 100)}% main thread), client ${latencyPhase.clientCores.toFixed(2)} cores`,
    );

    let throughputPhase: PhaseFigures | undefined;
    if (options.throughputMs > 0) {
      deliveries = 0;
      const ackedBefore = runs.map((run) => run.acked);
      const tBefore = await server.stats();
      const tClient = process.cpuUsage();
      const tStart = performance.now();
      const missing = await closedLoop(runs, options.throughputMs, options.window, sendOn, (listener) => (onAck = listener), options.burstUpdates);
      const updates = runs.reduce((sum, run, d) => sum + run.acked - (ackedBefore[d] ?? 0), 0);
      throughputPhase = phase(tBefore, await server.stats(), tClient, updates, deliveries, performance.now() - tStart, missing);
      progress(
        `${options.server}: throughput ${Math.round(throughputPhase.updatesPerSec)} updates/s (${Math.round(throughputPhase.deliveriesPerSec)} deliveries/s), ` +
          `${throughputPhase.serverCpuMicrosPerDelivery.toFixed(2)} µs CPU/delivery, server ${throughputPhase.serverCores.toFixed(2)} cores (${Math.round(throughputPhase.serverSystemShare * 100)}% sys, ${Math.round(throughputPhase.serverMainThreadShare * 100)}% main thread), client ${throughputPhase.clientCores.toFixed(2)} cores, ` +
          `disk ${(throughputPhase.serverDiskBytesPerUpdate / 1024).toFixed(2)} KB written per update`,
      );
    }
    const end = await server.stats();
    const settled = await server.gcStats();
    const afterBurst = { rss: settled.rss, rssAnon: settled.rssAnon, js: settled.heapUsed + settled.external };
    const disconnects = clients.reduce((sum, client) => sum + client.disconnects(), 0);
    const closes = clients.flatMap((client) => client.closes).slice(0, 20);
    if (disconnects > 0) progress(`${options.server}: ${disconnects} client reconnects; first close codes: ${closes.join(' | ')}`);
    const sampled = rss.stop();
    return { options, connectMs, latency, latencyPhase, throughputPhase, peakRss: sampled.peakRss, endRss: end.rss, afterBurst, disconnects, closes };
  } finally {
    rss.stop();
    for (const client of clients) client.destroy();
    await server.stop();
  }
}

/** The command-line flags of the fan-out workload, shared by every script built on runFanout. */
export const FANOUT_WORKLOAD_FLAGS = {
  docs: { type: 'string' },
  readers: { type: 'string' },
  rate: { type: 'string' },
  'latency-ms': { type: 'string' },
  'throughput-ms': { type: 'string' },
  window: { type: 'string' },
  'warmup-ms': { type: 'string' },
} as const;
