// Owns the idle baseline: each server started with no connection, full GC after a settle, memory by kind (servers interleaved).
import { finish, flags, main, num, servers } from './lib/cli.js';
import type { ProcessStats } from './lib/host.js';
import { launchServer, SYNC_SERVERS, type ServerKind } from './lib/launch.js';
import { emit, isMain, MB, progress, type Figure } from './lib/report.js';

const USAGE = `node --import=tsx bench/idle.ts [flags]
  --server plait,hocuspocus,floor   servers to run (default: all sync servers)
  --rounds R          start each server R times, interleaved (default 2)
  --settle-ms T       wait after ready before the full GC and the reading (default 3000)`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One start of `kind`: ready, settle, full GC, reading, graceful stop. */
export async function idleStats(kind: ServerKind, settleMs: number): Promise<ProcessStats> {
  const server = await launchServer(kind);
  try {
    await sleep(settleMs);
    return await server.gcStats();
  } finally {
    await server.stop();
  }
}

export function idleFigures(server: ServerKind, stats: ProcessStats, round: number): Figure[] {
  const bench = 'memory, idle';
  const detail = { round, note: 'no connection, full GC after the settle; the bench host (tsx loader) is in every server' };
  return [
    { bench, metric: 'anon RSS', unit: 'MB', server, value: stats.rssAnon / MB, better: 'lower', detail },
    { bench, metric: 'RSS', unit: 'MB', server, value: stats.rss / MB, better: 'lower' },
    { bench, metric: 'V8 heap used', unit: 'MB', server, value: stats.heapUsed / MB, better: 'lower' },
    { bench, metric: 'external', unit: 'MB', server, value: stats.external / MB, better: 'lower' },
  ];
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, { rounds: { type: 'string' }, 'settle-ms': { type: 'string' } });
    const rounds = num(values, 'rounds', 2, 1, 20);
    const settleMs = num(values, 'settle-ms', 3000, 0, 60_000);
    const all: Figure[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const server of servers(values, SYNC_SERVERS)) {
        const stats = await idleStats(server, settleMs);
        progress(
          `idle ${server} #${round}: anon ${(stats.rssAnon / MB).toFixed(1)} MB, RSS ${(stats.rss / MB).toFixed(1)}, heap ${(stats.heapUsed / MB).toFixed(1)}, external ${(stats.external / MB).toFixed(1)}`,
        );
        for (const figure of idleFigures(server, stats, round)) {
          emit(figure);
          all.push(figure);
        }
      }
    }
    finish(all);
  });
}
