// Owns the sync fan-out benchmark script: runs the workload against each server and emits its figures.
import { finish, flags, main, num, profileDir, reportProfiles, servers } from './lib/cli.js';
import { FANOUT_WORKLOAD_FLAGS, runFanout, type FanoutOptions, type FanoutResult } from './lib/fanout.js';
import { SYNC_SERVERS } from './lib/launch.js';
import { emit, isMain, MB, medianOfRounds, progress, type Figure } from './lib/report.js';

const USAGE = `node --import=tsx bench/fanout.ts [flags]
  --server plait,hocuspocus,y-websocket   servers to run, in order (default: all three)
  --docs M            documents, each with one writer (default 1)
  --readers N         readers per document (default 50)
  --rate R            updates/s per document in the latency phase (default 100)
  --latency-ms T      fixed-rate phase length (default 8000)
  --throughput-ms T   closed-loop phase length, 0 to skip (default 5000)
  --window W          closed loop: updates in flight per document (default 20)
  --payload B         characters inserted per update (default 32)
  --warmup U          updates per document before measuring (default 50)
  --warmup-ms T       unmeasured closed-loop phase before the measured ones, so they do not carry V8's one-time
                      compilation of the hot paths (default 5000; 0 measures from a cold start, as before)
  --burst-updates N   the closed-loop warm-up and the closed-loop phase each run until every document has N more updates
                      delivered (at most 60 s each) instead of for their time, so every server holds the same content
                      when memory is read after the burst (not used by npm run bench)
  --rounds R          run the server list R times, interleaved, each round starting one server later; each figure is
                      the median (default 1)
  --plait-env K=V,…   extra environment for the Plait server (experiments, e.g. GROUP_COMMIT_MS=20); not used by npm run bench
  --profile           write and summarize a V8 CPU profile of the Plait server (first round)
  --profile-server K  profile server kind K instead (e.g. floor-checked-logged)`;

export function fanoutLabel(docs: number, readers: number): string {
  return docs === 1 ? `fan-out 1×${readers}` : `fan-out ${docs} docs×${readers + 1} clients`;
}

/** The table/JSON figures of one server's run. */
export function fanoutFigures(result: FanoutResult): Figure[] {
  const { options, latency, latencyPhase, throughputPhase } = result;
  const bench = fanoutLabel(options.docs, options.readers);
  const server = options.server;
  const detail = {
    options: { ...options, env: undefined, cpuProfileDir: undefined },
    connectMs: Math.round(result.connectMs),
    latencyPhase,
    throughputPhase,
    latency,
    disconnects: result.disconnects,
    closes: result.closes,
  };
  const figures: Figure[] = [
    { bench, metric: 'updates/s (max)', unit: 'upd/s', server, value: throughputPhase?.updatesPerSec ?? Number.NaN, better: 'higher' },
    { bench, metric: 'latency p50', unit: 'ms', server, value: latency.p50, better: 'lower' },
    { bench, metric: 'latency p99', unit: 'ms', server, value: latency.p99, better: 'lower' },
    { bench, metric: 'latency max', unit: 'ms', server, value: latency.max, better: 'lower' },
    { bench, metric: 'server CPU / delivery', unit: 'µs', server, value: latencyPhase.serverCpuMicrosPerDelivery, better: 'lower', detail },
    {
      bench,
      metric: 'server CPU / delivery at max',
      unit: 'µs',
      server,
      value: throughputPhase?.serverCpuMicrosPerDelivery ?? Number.NaN,
      better: 'lower',
    },
    { bench, metric: 'server RSS peak', unit: 'MB', server, value: result.peakRss / MB, better: 'lower' },
    { bench, metric: 'server RSS after the burst', unit: 'MB', server, value: result.afterBurst.rss / MB, better: 'lower' },
    { bench, metric: 'server anon RSS after the burst', unit: 'MB', server, value: result.afterBurst.rssAnon / MB, better: 'lower' },
    // V8's heap in use plus external (ArrayBuffers) after the full GC: what of the anon memory is live JavaScript data.
    { bench, metric: 'server JS memory after the burst', unit: 'MB', server, value: result.afterBurst.js / MB, better: 'lower' },
    { bench, metric: 'lost deliveries + reconnects', unit: 'count', server, value: latencyPhase.missing + (throughputPhase?.missing ?? 0) + result.disconnects, better: 'lower' },
  ];
  return figures;
}

export function fanoutOptions(values: Record<string, string | boolean | undefined>): Omit<FanoutOptions, 'server'> {
  return {
    docs: num(values, 'docs', 1, 1, 10_000),
    readers: num(values, 'readers', 50, 1, 5000),
    rate: num(values, 'rate', 100, 0.1, 100_000),
    latencyMs: num(values, 'latency-ms', 8000, 100, 600_000),
    throughputMs: num(values, 'throughput-ms', 5000, 0, 600_000),
    window: num(values, 'window', 20, 1, 10_000),
    payload: num(values, 'payload', 32, 1, 1_000_000),
    warmup: num(values, 'warmup', 50, 0, 100_000),
    warmupMs: num(values, 'warmup-ms', 5000, 0, 600_000),
    ...(values['burst-updates'] === undefined ? {} : { burstUpdates: num(values, 'burst-updates', 1000, 1, 10_000_000) }),
  };
}

/** `K=V,K2=V2` → env object (undefined when the flag is absent). */
function parseEnv(raw: string | boolean | undefined): Record<string, string> | undefined {
  if (typeof raw !== 'string') return undefined;
  const env: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--plait-env takes K=V pairs, got "${pair}"`);
    env[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return env;
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, {
      ...FANOUT_WORKLOAD_FLAGS,
      'burst-updates': { type: 'string' },
      payload: { type: 'string' },
      warmup: { type: 'string' },
      'plait-env': { type: 'string' },
      rounds: { type: 'string' },
      'profile-server': { type: 'string' },
    });
    const base = fanoutOptions(values);
    const plaitEnv = parseEnv(values['plait-env']);
    const prof = profileDir(values);
    const rounds: Figure[][] = [];
    const count = num(values, 'rounds', 1, 1, 100);
    const list = servers(values, SYNC_SERVERS);
    for (let r = 0; r < count; r++) {
      const figures: Figure[] = [];
      // Each round starts one server later: a server's place in a round moves its figures (the second of two Plait
      // builds read ~6 % more CPU per delivery in bursts, bench/README.md "Eighth session"), so no server keeps one place.
      const shift = r % list.length;
      for (const server of [...list.slice(shift), ...list.slice(0, shift)]) {
        progress(`${fanoutLabel(base.docs, base.readers)}: ${server}${count > 1 ? ` round ${r + 1}/${count}` : ''} (rate ${base.rate}/s per doc, ${base.latencyMs} ms + ${base.throughputMs} ms)`);
        const isPlait = server === 'plait' || server === 'plait-nopersist' || server === 'plait-base';
        // only the first round's run of one server is profiled
        const profiled = prof !== undefined && server === (values['profile-server'] ?? 'plait') && r === 0;
        const result = await runFanout(
          { ...base, server, ...(profiled ? { cpuProfileDir: prof } : {}), ...(isPlait && plaitEnv !== undefined ? { env: plaitEnv } : {}) },
          progress,
        );
        figures.push(...fanoutFigures(result));
      }
      rounds.push(figures);
    }
    const all = medianOfRounds(rounds);
    for (const figure of all) emit(figure);
    reportProfiles(prof);
    finish(all);
  });
}
