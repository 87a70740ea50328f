// Owns the many-documents memory benchmark: memory per connection, per loaded document (small and 1 MB), and what eviction returns.
import { finish, flags, main, num, servers } from './lib/cli.js';
import { connectMany, syncTarget, type SyncClient, type SyncTarget } from './lib/clients.js';
import { buildContent, docWith, type Content } from './lib/content.js';
import type { ProcessStats } from './lib/host.js';
import { launchServer, SYNC_SERVERS, type ServerHandle, type ServerKind } from './lib/launch.js';
import { emit, isMain, progress, type Figure } from './lib/report.js';
import { median } from './lib/stats.js';

const USAGE = `node --import=tsx bench/memory.ts [flags]
  --server plait,hocuspocus,y-websocket   servers to run (default: all three)
  --small-docs D      small documents loaded at once (default 300)
  --large-docs D      ~1 MB documents loaded at once (default 8)
  --small-bytes B     characters per small document (default 1024)
  --large-bytes B     characters per large document (default 1048576)
  --small-rounds R    small-document rounds after the warm-up; their medians are reported (default 3)
  --evict-ms T        Plait DOC_IDLE_UNLOAD_MS for this run (default 1000)
  --settle-ms T       wait after clients sync before measuring (default 500)`;

const KB = 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const js = (s: ProcessStats): number => s.heapUsed + s.external;

interface Delta {
  readonly heap: number;
  readonly rss: number;
  /** Anonymous resident memory (RssAnon): RSS without file-backed pages such as LMDB's mapped data file. */
  readonly anon: number;
}

function perItem(after: ProcessStats, before: ProcessStats, count: number): Delta {
  return { heap: (js(after) - js(before)) / count, rss: (after.rss - before.rss) / count, anon: (after.rssAnon - before.rssAnon) / count };
}

interface Phase {
  readonly loaded: Delta;
  readonly retained: Delta;
}

export interface MemoryOptions {
  readonly server: ServerKind;
  readonly smallDocs: number;
  readonly largeDocs: number;
  readonly smallBytes: number;
  readonly largeBytes: number;
  readonly smallRounds: number;
  readonly evictMs: number;
  readonly settleMs: number;
}

export interface MemoryResult {
  /** Right after the start, no client yet, full GC: the baseline every absolute figure (e.g. after a burst) sits on. */
  readonly idle: ProcessStats;
  readonly perConnection: Delta;
  readonly small: Phase;
  readonly large: Phase;
}

/** Loads `count` documents (one client each, holding `content`), measures, disconnects, waits for eviction, measures. */
async function loadPhase(server: ServerHandle, target: SyncTarget, prefix: string, count: number, content: Content, options: MemoryOptions): Promise<Phase & { base: ProcessStats; after: ProcessStats }> {
  const base = await server.gcStats();
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const clients = await connectMany(target, names, { makeDoc: () => docWith(content), concurrency: 10 });
  await sleep(options.settleMs);
  const loaded = await server.gcStats();
  destroyAll(clients);
  await sleep(evictWait(options));
  const after = await server.gcStats();
  return { base, after, loaded: perItem(loaded, base, count), retained: perItem(after, base, count) };
}

function medianPhase(phases: readonly Phase[]): Phase {
  const of = (pick: (phase: Phase) => Delta): Delta => ({
    heap: median(phases.map((phase) => pick(phase).heap)),
    rss: median(phases.map((phase) => pick(phase).rss)),
    anon: median(phases.map((phase) => pick(phase).anon)),
  });
  return { loaded: of((phase) => phase.loaded), retained: of((phase) => phase.retained) };
}

function evictWait(options: MemoryOptions): number {
  return (options.server.startsWith('plait') ? options.evictMs : 0) + 2000 + options.settleMs;
}

function destroyAll(clients: readonly SyncClient[]): void {
  for (const client of clients) client.destroy();
}

export async function runMemory(options: MemoryOptions): Promise<MemoryResult> {
  const server = await launchServer(options.server, { env: { DOC_IDLE_UNLOAD_MS: String(options.evictMs) } });
  try {
    const idle = await server.gcStats();
    const target = await syncTarget(server);
    const small = buildContent(options.smallBytes, 16, 1);
    const large = buildContent(options.largeBytes, 64, 2);
    // A full unmeasured round first: code V8 compiles while the first documents load (optimized Yjs encode/decode,
    // ~1 KB per document at 300 documents) would otherwise count as document memory and as memory kept after eviction.
    await loadPhase(server, target, 'warm', options.smallDocs, small, options);

    const base = await server.gcStats();
    const conns = await connectMany(target, Array.from({ length: options.smallDocs }, () => 'conn-doc'), { concurrency: 10 });
    await sleep(options.settleMs);
    const withConns = await server.gcStats();
    destroyAll(conns);
    await sleep(evictWait(options));
    const perConnection = perItem(withConns, base, options.smallDocs);
    progress(`${options.server}: ${(perConnection.heap / KB).toFixed(1)} KB heap, ${(perConnection.rss / KB).toFixed(1)} KB RSS per connection`);

    // What eviction leaves is a fraction of a KB a document against a heap that moves by ±1 KB a document from round
    // to round (V8 still compiles and drops optimized code), so one round cannot tell a leak from noise: medians.
    const smallRounds: Phase[] = [];
    for (let round = 0; round < options.smallRounds; round++) smallRounds.push(await loadPhase(server, target, `small${round}`, options.smallDocs, small, options));
    const smallPhase = medianPhase(smallRounds);
    progress(`${options.server}: small docs loaded ${(smallPhase.loaded.heap / KB).toFixed(1)} KB heap/doc, after eviction ${(smallPhase.retained.heap / KB).toFixed(1)} KB/doc`);
    const largePhase = await loadPhase(server, target, 'large', options.largeDocs, large, options);
    progress(`${options.server}: 1 MB docs loaded ${(largePhase.loaded.heap / KB).toFixed(0)} KB heap/doc, after eviction ${(largePhase.retained.heap / KB).toFixed(0)} KB/doc`);
    const less = (phase: Phase): Phase => ({
      loaded: { heap: phase.loaded.heap - perConnection.heap, rss: phase.loaded.rss - perConnection.rss, anon: phase.loaded.anon - perConnection.anon },
      retained: phase.retained,
    });
    return { idle, perConnection, small: less(smallPhase), large: less(largePhase) };
  } finally {
    await server.stop();
  }
}

export function memoryFigures(server: ServerKind, result: MemoryResult, options: Omit<MemoryOptions, 'server'>): Figure[] {
  const kb = (bytes: number): number => bytes / KB;
  const MB = 1024 * 1024;
  const idleDetail = { note: 'right after the start, before any client, full GC', heapUsedMB: result.idle.heapUsed / MB, externalMB: result.idle.external / MB };
  const figures: Figure[] = [
    { bench: 'memory, idle', metric: 'anon RSS', unit: 'MB', server, value: result.idle.rssAnon / MB, better: 'lower', detail: idleDetail },
    { bench: 'memory, idle', metric: 'RSS', unit: 'MB', server, value: result.idle.rss / MB, better: 'lower' },
    { bench: 'memory, connections', metric: 'JS memory / connection', unit: 'KB', server, value: kb(result.perConnection.heap), better: 'lower' },
    { bench: 'memory, connections', metric: 'RSS / connection', unit: 'KB', server, value: kb(result.perConnection.rss), better: 'lower' },
    { bench: 'memory, connections', metric: 'anon RSS / connection', unit: 'KB', server, value: kb(result.perConnection.anon), better: 'lower' },
  ];
  for (const [bench, phase, docs] of [
    ['memory, small docs', result.small, options.smallDocs],
    ['memory, 1 MB docs', result.large, options.largeDocs],
  ] as const) {
    const detail = { docs, options, note: 'loaded = (with one client per doc − base)/docs − per-connection cost; retained = (after eviction − base)/docs; small docs: medians of the rounds' };
    figures.push(
      { bench, metric: 'memory / loaded doc', unit: 'KB', server, value: kb(phase.loaded.heap), better: 'lower', detail },
      { bench, metric: 'memory / doc with its connection', unit: 'KB', server, value: kb(phase.loaded.heap + result.perConnection.heap), better: 'lower' },
      { bench, metric: 'RSS / loaded doc', unit: 'KB', server, value: kb(phase.loaded.rss), better: 'lower' },
      { bench, metric: 'anon RSS / loaded doc', unit: 'KB', server, value: kb(phase.loaded.anon), better: 'lower' },
      { bench, metric: 'retained after eviction', unit: 'KB/doc', server, value: kb(phase.retained.heap), better: 'lower' },
      { bench, metric: 'RSS retained after eviction', unit: 'KB/doc', server, value: kb(phase.retained.rss), better: 'lower' },
    );
  }
  return figures;
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, {
      'small-docs': { type: 'string' },
      'large-docs': { type: 'string' },
      'small-bytes': { type: 'string' },
      'large-bytes': { type: 'string' },
      'small-rounds': { type: 'string' },
      'evict-ms': { type: 'string' },
      'settle-ms': { type: 'string' },
    });
    const options = {
      smallDocs: num(values, 'small-docs', 300, 1, 100_000),
      largeDocs: num(values, 'large-docs', 8, 1, 1000),
      smallBytes: num(values, 'small-bytes', 1024, 16, 1e6),
      largeBytes: num(values, 'large-bytes', 1024 * 1024, 1024, 64 * 1024 * 1024),
      smallRounds: num(values, 'small-rounds', 3, 1, 20),
      evictMs: num(values, 'evict-ms', 1000, 0, 600_000),
      settleMs: num(values, 'settle-ms', 500, 0, 60_000),
    };
    const all: Figure[] = [];
    for (const server of servers(values, SYNC_SERVERS)) {
      progress(`memory: ${server} (${options.smallDocs} small docs, ${options.largeDocs} × ${options.largeBytes} B docs)`);
      const result = await runMemory({ ...options, server });
      for (const figure of memoryFigures(server, result, options)) {
        emit(figure);
        all.push(figure);
      }
    }
    finish(all);
  });
}
