// Owns the load-time benchmark: opening a document from disk (snapshot + log tail, after a kill -9) versus opening it loaded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as Y from 'yjs';
import { finish, flags, main, num, profileDir, reportProfiles, servers } from './lib/cli.js';
import { connectClient, connectMany, syncTarget, within, type SyncClient, type SyncTarget } from './lib/clients.js';
import { buildContent, docWith, whenLength, type Content } from './lib/content.js';
import { launchServer, type ServerHandle, type ServerKind } from './lib/launch.js';
import { emit, isMain, progress, type Figure } from './lib/report.js';
import { median } from './lib/stats.js';

const USAGE = `node --import=tsx bench/load.ts [flags]
  --server plait,y-websocket-leveldb   servers with persistence (default: both; Hocuspocus has none without an extension)
  --small-docs D      small documents (default 20)
  --large-docs D      ~1 MB documents (default 4)
  --tail U            updates appended after the snapshot, left in the log by kill -9 (default 200)
  --warmup-docs W     documents of each class stored like the others and opened cold first, unmeasured, so the
                      measured opens do not carry V8's compilation of the open path (default 10; at most the class's
                      count; 0 measures the first opens after the start)
  --tail-gap-ms T     pause between tail updates (default 0: all at once, so Plait's group commit stores them in one
                      or two log rows; above GROUP_COMMIT_MS (100) each update is a row of its own)
  --profile           V8 CPU profile of the Plait server that opens the documents cold (summary on stderr)`;

const OPEN_TIMEOUT_MS = 60_000;
const DEFAULT_WARMUP_DOCS = 10;
const TAIL_TEXT = '0123456789';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface LoadResult {
  readonly coldMs: number[];
  /** The unmeasured warm-up's cold opens (the first opens after the start). */
  readonly firstMs: number[];
  readonly warmMs: number[];
  /** Server CPU (µs) of each open, its client's close included. */
  readonly coldCpu: number[];
  readonly warmCpu: number[];
}

/** Lets an opener's close reach the server before its CPU is read again. */
const CLOSE_SETTLE_MS = 30;

/** Opens each document with a fresh client and times until its whole content has arrived; server CPU around each. */
async function timeOpens(server: ServerHandle, target: SyncTarget, names: readonly string[], length: number): Promise<{ ms: number[]; cpu: number[] }> {
  const ms: number[] = [];
  const cpu: number[] = [];
  for (const name of names) {
    const before = await server.stats();
    const start = performance.now();
    const client = connectClient(target, name, new Y.Doc());
    await within(whenLength(client.doc, length), OPEN_TIMEOUT_MS, `open ${name}`);
    ms.push(performance.now() - start);
    client.destroy();
    await sleep(CLOSE_SETTLE_MS);
    cpu.push((await server.stats()).cpuMicros - before.cpuMicros);
  }
  return { ms, cpu };
}

function destroyAll(clients: readonly SyncClient[]): void {
  for (const client of clients) client.destroy();
}

async function runClass(kind: ServerKind, prefix: string, count: number, warmups: number, content: Content, tail: { count: number; gapMs: number }, cpuProfileDir: string | undefined): Promise<LoadResult> {
  const dataDir = mkdtempSync(join(tmpdir(), `plait-bench-load-${kind}-`));
  // documents stay loaded while the bench runs; the restarts are what unloads them
  const env = { DOC_IDLE_UNLOAD_MS: '600000' };
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const warmupNames = Array.from({ length: warmups }, (_, i) => `${prefix}-warmup-${i}`);
  const stored = [...warmupNames, ...names];
  try {
    // 1. store the documents, stop gracefully (Plait writes its snapshots)
    const first = await launchServer(kind, { dataDir, keepData: true, env });
    const target = await syncTarget(first);
    const writers = await connectMany(target, stored, { makeDoc: () => docWith(content), concurrency: 4 });
    await sleep(500);
    destroyAll(writers);
    await first.stop();

    // 2. restart, append a tail of small updates to every document, then kill -9 (no final snapshot)
    const second = await launchServer(kind, { dataDir, keepData: true, env });
    const again: SyncTarget = { ...target, port: second.port };
    for (const name of stored) {
      const client = connectClient(again, name, new Y.Doc());
      await within(whenLength(client.doc, content.length), OPEN_TIMEOUT_MS, `reopen ${name}`);
      const text = client.doc.getText('content');
      for (let i = 0; i < tail.count; i++) {
        text.insert((i * 7919) % text.length, TAIL_TEXT);
        if (tail.gapMs > 0) await sleep(tail.gapMs);
      }
      await sleep(100);
      client.destroy();
    }
    await sleep(500);
    // what the server accepted is on disk before the kill: y-websocket's LevelDB writes are queued asynchronously
    // and a kill that beat them made its open time out (a lost tail, not a slow open)
    await second.settle();
    await second.kill();

    // 3. restart and open each document cold, then again while a holder keeps it loaded (warm)
    const third = await launchServer(kind, { dataDir, keepData: true, env, ...(kind === 'plait' && cpuProfileDir !== undefined ? { cpuProfileDir } : {}) });
    try {
      const fresh: SyncTarget = { ...target, port: third.port };
      const length = content.length + tail.count * TAIL_TEXT.length;
      const first = await timeOpens(third, fresh, warmupNames, length);
      const cold = await timeOpens(third, fresh, names, length);
      const holders = names.map((name) => connectClient(fresh, name, new Y.Doc()));
      await within(Promise.all(holders.map((h) => whenLength(h.doc, length))), OPEN_TIMEOUT_MS, 'holders');
      const warm = await timeOpens(third, fresh, names, length);
      destroyAll(holders);
      return { coldMs: cold.ms, firstMs: first.ms, warmMs: warm.ms, coldCpu: cold.cpu, warmCpu: warm.cpu };
    } finally {
      await third.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runLoad(kind: ServerKind, options: { smallDocs: number; largeDocs: number; warmupDocs?: number; tail: number; tailGapMs?: number; cpuProfileDir?: string }): Promise<Figure[]> {
  const figures: Figure[] = [];
  const classes = [
    { bench: 'load from disk, small docs', prefix: 'small', count: options.smallDocs, content: buildContent(1024, 16, 1) },
    { bench: 'load from disk, 1 MB docs', prefix: 'large', count: options.largeDocs, content: buildContent(1024 * 1024, 64, 2) },
  ];
  for (const { bench, prefix, count, content } of classes) {
    const warmups = Math.min(options.warmupDocs ?? DEFAULT_WARMUP_DOCS, count);
    const result = await runClass(kind, prefix, count, warmups, content, { count: options.tail, gapMs: options.tailGapMs ?? 0 }, options.cpuProfileDir);
    const cold = median(result.coldMs);
    const warm = median(result.warmMs);
    progress(`${bench} on ${kind}: cold open p50 ${cold.toFixed(1)} ms, warm open p50 ${warm.toFixed(1)} ms`);
    const coldCpu = median(result.coldCpu);
    const warmCpu = median(result.warmCpu);
    const detail = { docs: count, warmupDocs: warmups, tail: options.tail, tailGapMs: options.tailGapMs ?? 0, firstMs: result.firstMs.map(Math.round), coldMs: result.coldMs.map(Math.round), warmMs: result.warmMs.map(Math.round), coldCpu: result.coldCpu, warmCpu: result.warmCpu };
    figures.push(
      { bench, metric: `cold open (snapshot + ${options.tail}-update tail) p50`, unit: 'ms', server: kind, value: cold, better: 'lower', detail },
      ...(warmups === 0 ? [] : [{ bench, metric: `first ${warmups} cold opens after the start p50`, unit: 'ms', server: kind, value: median(result.firstMs), better: 'lower' } satisfies Figure]),
      { bench, metric: 'warm open (already loaded) p50', unit: 'ms', server: kind, value: warm, better: 'lower' },
      { bench, metric: 'load cost (cold − warm)', unit: 'ms', server: kind, value: cold - warm, better: 'lower' },
      { bench, metric: 'server CPU / cold open p50', unit: 'µs', server: kind, value: coldCpu, better: 'lower' },
      { bench, metric: 'server CPU / warm open p50', unit: 'µs', server: kind, value: warmCpu, better: 'lower' },
    );
  }
  return figures;
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, { 'small-docs': { type: 'string' }, 'large-docs': { type: 'string' }, 'warmup-docs': { type: 'string' }, tail: { type: 'string' }, 'tail-gap-ms': { type: 'string' } });
    const dir = profileDir(values);
    const options = {
      smallDocs: num(values, 'small-docs', 20, 1, 10_000),
      largeDocs: num(values, 'large-docs', 4, 1, 1000),
      warmupDocs: num(values, 'warmup-docs', DEFAULT_WARMUP_DOCS, 0, 1000),
      tail: num(values, 'tail', 200, 0, 100_000),
      tailGapMs: num(values, 'tail-gap-ms', 0, 0, 10_000),
    };
    const all: Figure[] = [];
    for (const kind of servers(values, ['plait', 'y-websocket-leveldb'])) {
      progress(`load: ${kind}`);
      const figures = await runLoad(kind, { ...options, ...(dir === undefined ? {} : { cpuProfileDir: dir }) });
      for (const figure of figures) emit(figure);
      all.push(...figures);
    }
    reportProfiles(dir);
    finish(all);
  });
}
