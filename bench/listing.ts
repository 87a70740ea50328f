// Owns the listing benchmark: Get Comment Annotations across a whole organization (no document named), cold after a
// restart and warm, with the server's CPU and memory around the first page (it must not load every document), and a
// page whose filter no thread matches.
import { rmSync } from 'node:fs';
import { finish, flags, main, num, servers } from './lib/cli.js';
import { plaitCredentials, postPlait } from './lib/clients.js';
import { launchServer, type ServerKind } from './lib/launch.js';
import { emit, isMain, MB, progress, type Figure } from './lib/report.js';
import { median } from './lib/stats.js';

const USAGE = `node --import=tsx bench/listing.ts [flags]
  --docs N     documents of the organization, one thread each (default 5000)
  --pages P    warm pages timed after the first (default 20)
  --server K   plait (default) or plait-base (the build in BENCH_BASE_DIST, for before/after)`;

export async function runListing(kind: ServerKind, options: { docs: number; pages: number }): Promise<Figure[]> {
  // The threads are written by one server, and read by a second one started on the same data: nothing is loaded then.
  const writer = await launchServer(kind, { keepData: true });
  const dataDir = writer.dataDir;
  try {
    const { organizationId, headers } = await plaitCredentials(writer.port);
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < options.docs) {
          const i = next++;
          await postPlait(writer.port, headers, '/v1/commentannotations/add', { organizationId, documentId: `doc-${i}`, commentAnnotations: [{ commentData: [{ commentText: `comment ${i}`, from: { userId: `u${i % 7}` } }] }] });
        }
      }),
    );
    await writer.stop();
    const reader = await launchServer(kind, { dataDir });
    try {
      const page = (): Promise<void> => postPlait(reader.port, headers, '/v2/commentannotations/get', { organizationId, pageSize: 50 });
      const before = await reader.gcStats();
      let started = performance.now();
      await page();
      const coldMs = performance.now() - started;
      const after = await reader.gcStats();
      const warm: number[] = [];
      const cpuBefore = after.cpuMicros;
      for (let i = 0; i < options.pages; i++) {
        started = performance.now();
        await page();
        warm.push(performance.now() - started);
      }
      const cpu = ((await reader.stats()).cpuMicros - cpuBefore) / options.pages;
      const grew = (after.rssAnon - before.rssAnon) / MB;
      // A filter no thread matches: the worst case of a filtered page, which cannot stop at a page of matches.
      const filtered: number[] = [];
      const filteredCpuBefore = (await reader.stats()).cpuMicros;
      for (let i = 0; i < options.pages; i++) {
        started = performance.now();
        await postPlait(reader.port, headers, '/v2/commentannotations/get', { organizationId, pageSize: 50, userIds: ['nobody'] });
        filtered.push(performance.now() - started);
      }
      const filteredCpu = ((await reader.stats()).cpuMicros - filteredCpuBefore) / options.pages;
      progress(`listing ${kind}: ${options.docs} documents, first page ${coldMs.toFixed(1)} ms (anon RSS +${grew.toFixed(1)} MB), then p50 ${median(warm).toFixed(1)} ms, ${(cpu / 1000).toFixed(1)} ms CPU a page; a filter nothing matches p50 ${median(filtered).toFixed(1)} ms, ${(filteredCpu / 1000).toFixed(1)} ms CPU a page`);
      const bench = `comment listing, whole organization, ${options.docs} documents`;
      return [
        { bench, metric: 'first page after a restart', unit: 'ms', server: kind, value: coldMs, better: 'lower', detail: { ...options, pageSize: 50 } },
        { bench, metric: 'anon RSS added by the first page', unit: 'MB', server: kind, value: grew, better: 'lower' },
        { bench, metric: 'page p50', unit: 'ms', server: kind, value: median(warm), better: 'lower' },
        { bench, metric: 'server CPU / page', unit: 'ms', server: kind, value: cpu / 1000, better: 'lower' },
        { bench, metric: 'page p50, a filter no thread matches', unit: 'ms', server: kind, value: median(filtered), better: 'lower' },
        { bench, metric: 'server CPU / page, a filter no thread matches', unit: 'ms', server: kind, value: filteredCpu / 1000, better: 'lower' },
      ];
    } finally {
      await reader.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, { docs: { type: 'string' }, pages: { type: 'string' } });
    const kinds = servers(values, ['plait']);
    if (kinds.some((kind) => kind !== 'plait' && kind !== 'plait-base')) throw new Error('--server takes plait and plait-base');
    const all: Figure[] = [];
    for (const kind of kinds) {
      const figures = await runListing(kind, { docs: num(values, 'docs', 5000, 1, 1_000_000), pages: num(values, 'pages', 20, 1, 10_000) });
      for (const figure of figures) emit(figure);
      all.push(...figures);
    }
    finish(all);
  });
}
