// Owns the durability-cost benchmark: the same fan-out workload with Plait's update log on versus PERSISTENCE=false.
import { finish, flags, main, num, servers } from './lib/cli.js';
import { FANOUT_WORKLOAD_FLAGS, runFanout, type FanoutOptions } from './lib/fanout.js';
import type { ServerKind } from './lib/launch.js';
import { emit, isMain, progress, type Figure } from './lib/report.js';

const USAGE = `node --import=tsx bench/durability.ts [flags]
  --server plait,plait-nopersist   variants to run (add y-websocket,y-websocket-leveldb for the peer's own cost)
  --docs M            documents, each with one writer (default 4)
  --readers N         readers per document (default 4)
  --rate R            updates/s per document in the latency phase (default 100)
  --latency-ms T      fixed-rate phase length (default 4000)
  --throughput-ms T   closed-loop phase length (default 5000)
  --window W          updates in flight per document (default 20)
  --warmup-ms T       unmeasured closed-loop phase first (default 5000; bench/fanout.ts --help)`;

export async function runDurability(kinds: readonly ServerKind[], base: Omit<FanoutOptions, 'server'>): Promise<Figure[]> {
  const bench = 'durability cost';
  const figures: Figure[] = [];
  for (const server of kinds) {
    progress(`${bench}: ${server} (${base.docs} docs × (1 writer + ${base.readers} readers))`);
    const result = await runFanout({ ...base, server }, progress);
    const detail = { options: base, latencyPhase: result.latencyPhase, throughputPhase: result.throughputPhase, latency: result.latency };
    figures.push(
      { bench, metric: 'updates/s (max)', unit: 'upd/s', server, value: result.throughputPhase?.updatesPerSec ?? Number.NaN, better: 'higher', detail },
      { bench, metric: 'server CPU / update at max', unit: 'µs', server, value: (result.throughputPhase?.serverCpuMicrosPerDelivery ?? Number.NaN) * base.readers, better: 'lower' },
      { bench, metric: 'latency p99 at fixed rate', unit: 'ms', server, value: result.latency.p99, better: 'lower' },
      { bench, metric: 'disk written / update at max', unit: 'KB', server, value: (result.throughputPhase?.serverDiskBytesPerUpdate ?? Number.NaN) / 1024, better: 'lower' },
    );
  }
  return figures;
}

export function durabilityOptions(values: Record<string, string | boolean | undefined>): Omit<FanoutOptions, 'server'> {
  return {
    docs: num(values, 'docs', 4, 1, 10_000),
    readers: num(values, 'readers', 4, 1, 5000),
    rate: num(values, 'rate', 100, 0.1, 100_000),
    latencyMs: num(values, 'latency-ms', 4000, 100, 600_000),
    throughputMs: num(values, 'throughput-ms', 5000, 100, 600_000),
    window: num(values, 'window', 20, 1, 10_000),
    payload: 32,
    warmup: 50,
    warmupMs: num(values, 'warmup-ms', 5000, 0, 600_000),
  };
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, {
      ...FANOUT_WORKLOAD_FLAGS,
    });
    const figures = await runDurability(servers(values, ['plait', 'plait-nopersist']), durabilityOptions(values));
    for (const figure of figures) emit(figure);
    finish(figures);
  });
}
