// Owns the delivery benchmark: events per second from REST through the outbox dispatcher to a local webhook receiver, and
// the latency of a REST comment write with 1,000 deliveries pending (it must stay flat), the server's CPU with deliveries
// held behind an endpoint that never answers (it must stay idle), the cost of an activity-log page in a large
// organization (it must not grow with the log), and how long another workspace's webhook waits behind one workspace's
// fan-out and beside workspaces whose endpoints never answer (neither must hold it).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { finish, flags, main, num, profileDir, reportProfiles, servers } from './lib/cli.js';
import { plaitCredentials, postPlait } from './lib/clients.js';
import { launchServer, type ServerHandle, type ServerKind } from './lib/launch.js';
import { emit, isMain, progress, type Figure } from './lib/report.js';
import { percentile } from './lib/stats.js';

const USAGE = `node --import=tsx bench/delivery.ts [flags]
  --events N        comments written for the throughput phase (default 2000)
  --pending N       deliveries held pending for the latency phase (default 1000)
  --held N          deliveries held behind an endpoint that never answers (default 5000)
  --writes N        comment writes timed in each latency phase (default 400)
  --concurrency C   REST requests in flight (default 8)
  --activities N    activities in the organization whose log pages are read (default 20000)
  --fanout N        comments one workspace with 100 endpoints writes ahead of another's one (default 1000)
  --dead-keys K     workspaces whose endpoints never answer, beside which two others' webhooks are timed (default 4)
  --dead-endpoints E  endpoints each of those workspaces has (default 2; 16 and 16 fill every slot a new endpoint may take)
  --dead-only       run only that step
  --profile         write and summarize a V8 CPU profile of the Plait server
  --server K        plait (default) or plait-base (the build in BENCH_BASE_DIST, for before/after)`;

interface Receiver {
  readonly url: string;
  readonly server: Server;
  count: number;
  onCount?: () => void;
  /** Never answer: requests are read and left open until the server closes (an endpoint that hangs). */
  hang?: boolean;
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = { url: '', server: createServer(), count: 0 };
  receiver.server.on('request', (req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.count++;
      if (receiver.hang === true) return;
      res.statusCode = 204;
      res.end();
      receiver.onCount?.();
    });
  });
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  return Object.assign(receiver, { url: `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}` });
}

/** Runs `count` calls of `task` with `concurrency` in flight; returns each call's latency in ms. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const started = performance.now();
        await task(i);
        latencies.push(performance.now() - started);
      }
    }),
  );
  return latencies;
}

function comment(organizationId: string, documentId: string, i: number): unknown {
  return { organizationId, documentId, commentAnnotations: [{ annotationId: `t${i}`, commentData: [{ commentText: `comment ${i}`, from: { userId: 'u1' } }] }] };
}

export async function runDelivery(options: { events: number; pending: number; held: number; writes: number; concurrency: number; activities: number; fanout: number; deadKeys?: number; deadEndpoints?: number; deadOnly?: boolean }, cpuProfileDir?: string, kind: ServerKind = 'plait'): Promise<Figure[]> {
  const figures: Figure[] = [];
  const fast = await startReceiver();
  const slow = await startReceiver();
  const stuck = Object.assign(await startReceiver(), { hang: true });
  const plait: ServerHandle = await launchServer(kind, { env: { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8', LOG_LEVEL: 'warn' }, ...(cpuProfileDir === undefined ? {} : { cpuProfileDir }) });
  try {
    if (options.deadOnly === true) return await besideDeadEndpoints(plait, stuck, options.deadKeys ?? 4, options.deadEndpoints ?? 2);
    const { organizationId, headers } = await plaitCredentials(plait.port);
    const call = (path: string, data: unknown): Promise<void> => postPlait(plait.port, headers, path, data);
    await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
    await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${fast.url}/hook`, channels: ['throughput'] });

    // Throughput: every write is an event; the figure is events delivered per second, write start to last delivery.
    const delivered = new Promise<void>((resolve) => {
      fast.onCount = () => {
        if (fast.count >= options.events) resolve();
      };
    });
    const cpuBefore = await plait.stats();
    const started = performance.now();
    await pool(options.events, options.concurrency, (i) => call('/v1/commentannotations/add', comment(organizationId, 'throughput', i)));
    await delivered;
    const seconds = (performance.now() - started) / 1000;
    const cpu = (await plait.stats()).cpuMicros - cpuBefore.cpuMicros;
    progress(`delivery: ${options.events} events in ${seconds.toFixed(2)} s, ${Math.round(options.events / seconds)} events/s, server ${(cpu / options.events).toFixed(0)} µs/event`);
    figures.push(
      { bench: 'delivery', metric: 'events/s, REST to webhook receiver', unit: 'ev/s', server: plait.kind, value: options.events / seconds, better: 'higher', detail: { ...options } },
      { bench: 'delivery', metric: 'server CPU / event (write + deliver)', unit: 'µs', server: plait.kind, value: cpu / options.events, better: 'lower' },
    );

    // Latency of REST comment writes: idle, then with `pending` deliveries held by a rate-limited endpoint.
    const timed = async (label: string, documentId: string, offset: number): Promise<number[]> => {
      const latencies = await pool(options.writes, options.concurrency, (i) => call('/v1/commentannotations/add', comment(organizationId, documentId, offset + i)));
      latencies.sort((a, b) => a - b);
      progress(`delivery: comment write ${label}: p50 ${percentile(latencies, 50).toFixed(2)} ms p99 ${percentile(latencies, 99).toFixed(2)} ms`);
      return latencies;
    };
    const idle = await timed('idle', 'latency-idle', 0);
    await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${slow.url}/slow`, channels: ['backlog'], rateLimit: 1 });
    await pool(options.pending, options.concurrency, (i) => call('/v1/commentannotations/add', comment(organizationId, 'backlog', i)));
    const loaded = await timed(`with ${options.pending} pending`, 'latency-loaded', options.writes);
    progress(`delivery: the slow receiver got ${slow.count} of ${options.pending} while the rest waited`);
    for (const [label, latencies] of [['idle', idle], [`${options.pending} deliveries pending`, loaded]] as const) {
      figures.push(
        { bench: `delivery: comment write, ${label}`, metric: 'latency p50', unit: 'ms', server: plait.kind, value: percentile(latencies, 50), better: 'lower' },
        { bench: `delivery: comment write, ${label}`, metric: 'latency p99', unit: 'ms', server: plait.kind, value: percentile(latencies, 99), better: 'lower' },
      );
    }
    figures.push(...(await heldBehindAHang(plait, call, organizationId, stuck, options.held, options.pending - slow.count)));
    figures.push(...(await activityPages(plait, call, organizationId, options.activities)));
    figures.push(...(await behindAFanOut(plait, stuck, options.fanout)));
    figures.push(...(await besideDeadEndpoints(plait, stuck, options.deadKeys ?? 4, options.deadEndpoints ?? 2)));
  } finally {
    await plait.stop();
    fast.server.closeAllConnections();
    slow.server.closeAllConnections();
    stuck.server.closeAllConnections();
    fast.server.close();
    slow.server.close();
    stuck.server.close();
  }
  return figures;
}

/**
 * `count` deliveries due at once to an endpoint that never answers (one attempt hangs at a time, 15 s each; 8 before the twentieth session), beside the
 * `limited` still waiting for the endpoint of the latency phase (1 a second): the server's CPU over the next 2 s, when
 * nothing else happens, must stay that of an idle server. Before the eighteenth session every due job held back made
 * the runner look again at once, each look walking the whole backlog, and the rate-limited endpoint's whole backlog
 * was tried and written back once a second.
 */
async function heldBehindAHang(plait: ServerHandle, call: (path: string, data: unknown) => Promise<void>, organizationId: string, stuck: Receiver, count: number, limited: number): Promise<Figure[]> {
  const asked = stuck.count;
  await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${stuck.url}/never`, channels: ['held'] });
  await pool(count, 8, (i) => call('/v1/commentannotations/add', comment(organizationId, 'held', i)));
  // The first attempts are out once the endpoint has been asked: once since the twentieth session (it has never
  // answered, so it has one attempt in flight), 8 times before; the rest of a scan's attempts follow within the turn.
  while (stuck.count === asked) await new Promise<void>((resolve) => setImmediate(resolve));
  await new Promise<void>((resolve) => setTimeout(resolve, 200));
  const before = await plait.stats();
  const started = performance.now();
  await new Promise<void>((resolve) => setTimeout(resolve, 2000));
  const share = ((await plait.stats()).cpuMicros - before.cpuMicros) / 1000 / (performance.now() - started);
  progress(`delivery: ${count} deliveries held behind an endpoint that never answers (${stuck.count} attempts out), ~${limited} behind one limited to 1 a second: server CPU ${(share * 100).toFixed(1)} % of a core over 2 s`);
  return [{ bench: `delivery: ${count} deliveries held behind an endpoint that never answers, the latency phase's behind a rate limit`, metric: 'server CPU while nothing else happens', unit: '% of a core', server: plait.kind, value: share * 100, better: 'lower', detail: { limited } }];
}

/**
 * One workspace with 100 advanced webhook endpoints (to the endpoint that never answers, so its attempts hold only its
 * own slots) writes `count` comments, then another workspace writes one: the time from that write to its webhook
 * reaching a receiver. Before the nineteenth session the dispatcher planned events in commit order, so the second
 * workspace's event waited for the first's `count` × 100 jobs to be planned.
 */
async function behindAFanOut(plait: ServerHandle, stuck: Receiver, count: number): Promise<Figure[]> {
  const receiver = await startReceiver();
  try {
    const [heavy, light] = [await plaitCredentials(plait.port), await plaitCredentials(plait.port)];
    const heavyCall = (path: string, data: unknown): Promise<void> => postPlait(plait.port, heavy.headers, path, data);
    const lightCall = (path: string, data: unknown): Promise<void> => postPlait(plait.port, light.headers, path, data);
    for (const call of [heavyCall, lightCall]) await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
    await pool(100, 8, (i) => heavyCall('/v2/workspace/advancedwebhook/endpoints/create', { url: `${stuck.url}/fan-${i}` }));
    await lightCall('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/light` });
    await pool(count, 8, (i) => heavyCall('/v1/commentannotations/add', comment(heavy.organizationId, 'fan-out', i)));
    const reached = new Promise<void>((resolve) => (receiver.onCount = resolve));
    const started = performance.now();
    await lightCall('/v1/commentannotations/add', comment(light.organizationId, 'light', 0));
    await reached;
    const ms = performance.now() - started;
    progress(`delivery: another workspace's webhook behind one workspace's ${count} comments to 100 endpoints: ${ms.toFixed(0)} ms from its write to its receiver`);
    return [{ bench: `delivery: another workspace's webhook behind one workspace's ${count} comments to 100 endpoints`, metric: 'write to receiver', unit: 'ms', server: plait.kind, value: ms, better: 'lower' }];
  } finally {
    receiver.server.closeAllConnections();
    receiver.server.close();
  }
}

/**
 * `keys` workspaces with `endpoints` endpoints each that never answer (an attempt hangs for 15 s), 20 comments each,
 * then two other workspaces write a comment: one that has delivered to its endpoint before (established) and a new
 * one; the figures are the time from each write to its webhook at a receiver. Before the nineteenth session the
 * hanging attempts held all 64 of the runner's slots (4 × 2 endpoints); before the twentieth, 16 × 16 new endpoints
 * took all 256 working slots until their first attempts timed out; now endpoints never delivered to have their own.
 */
async function besideDeadEndpoints(plait: ServerHandle, stuck: Receiver, keys: number, endpoints: number): Promise<Figure[]> {
  const receivers: Receiver[] = [];
  /** A workspace with one endpoint on a receiver of its own; the function writes a comment and resolves with the ms until its webhook arrived. */
  const victim = async (): Promise<() => Promise<number>> => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const light = await plaitCredentials(plait.port);
    const call = (path: string, data: unknown): Promise<void> => postPlait(plait.port, light.headers, path, data);
    await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
    await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/alive` });
    let written = 0;
    return async () => {
      const reached = new Promise<void>((resolve) => (receiver.onCount = resolve));
      const started = performance.now();
      await call('/v1/commentannotations/add', comment(light.organizationId, 'alive', written++));
      await reached;
      return performance.now() - started;
    };
  };
  try {
    // The established workspace delivers once before the others write.
    const established = await victim();
    await established();
    const before = stuck.count;
    for (let k = 0; k < keys; k++) {
      const dead = await plaitCredentials(plait.port);
      const call = (path: string, data: unknown): Promise<void> => postPlait(plait.port, dead.headers, path, data);
      await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
      for (let e = 0; e < endpoints; e++) await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${stuck.url}/dead-${k}-${e}` });
      await pool(20, 8, (i) => call('/v1/commentannotations/add', comment(dead.organizationId, 'dead', i)));
    }
    // Every attempt the runner will start to the dead endpoints is out (none of them ends within 15 s): the count stands still for 500 ms.
    let seen = -1;
    while (stuck.count === before || stuck.count !== seen) {
      seen = stuck.count;
      await new Promise<void>((resolve) => setTimeout(resolve, 500));
    }
    const out = stuck.count - before;
    const fresh = await victim();
    // Both write at once.
    const [msEstablished, msFresh] = await Promise.all([established(), fresh()]);
    const label = `beside ${keys} workspaces with ${endpoints} endpoints each that never answer`;
    progress(`delivery: ${out} attempts out to ${keys} × ${endpoints} endpoints that never answer; another workspace's webhook, delivered to before: ${msEstablished.toFixed(0)} ms from its write to its receiver; a new workspace's, written at the same time: ${msFresh.toFixed(0)} ms`);
    return [
      { bench: `delivery: another workspace's webhook ${label}`, metric: 'write to receiver', unit: 'ms', server: plait.kind, value: msFresh, better: 'lower', detail: { attemptsOut: out } },
      { bench: `delivery: an established workspace's webhook ${label}`, metric: 'write to receiver', unit: 'ms', server: plait.kind, value: msEstablished, better: 'lower', detail: { attemptsOut: out } },
    ];
  } finally {
    for (const receiver of receivers) {
      receiver.server.closeAllConnections();
      receiver.server.close();
    }
  }
}

/**
 * Activity-log pages of 50 in an organization of `count` activities over 20 documents, one request at a time: the
 * newest page, and the newest page of one document. Each page must cost the same whatever the log holds.
 */
async function activityPages(plait: ServerHandle, call: (path: string, data: unknown) => Promise<void>, organizationId: string, count: number): Promise<Figure[]> {
  await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } });
  const batches = Math.ceil(count / 100);
  await pool(batches, 8, async (b) => {
    const activities = Array.from({ length: Math.min(100, count - b * 100) }, (_, i) => ({ featureType: 'custom', actionType: 'edited', actionUser: { userId: `u${i % 7}` }, targetEntityId: `e${b}`, displayMessageTemplate: 'edited {{n}}', displayMessageTemplateData: { n: b * 100 + i } }));
    await call('/v2/activities/add', { organizationId, documentId: `log-${b % 20}`, activities });
  });
  const figures: Figure[] = [];
  for (const [label, filter] of [['newest', {}], ['newest of one document', { documentId: 'log-3' }]] as const) {
    const cpuBefore = await plait.stats();
    const reads = 200;
    const latencies = await pool(reads, 1, () => call('/v2/activities/get', { organizationId, pageSize: 50, ...filter }));
    const cpu = ((await plait.stats()).cpuMicros - cpuBefore.cpuMicros) / reads;
    latencies.sort((a, b) => a - b);
    progress(`delivery: activity page of 50 (${label}) among ${count}: p50 ${percentile(latencies, 50).toFixed(2)} ms, server ${cpu.toFixed(0)} µs/page`);
    const bench = `delivery: activity-log page of 50, ${label}, ${count} activities`;
    figures.push(
      { bench, metric: 'latency p50', unit: 'ms', server: plait.kind, value: percentile(latencies, 50), better: 'lower' },
      { bench, metric: 'server CPU / page', unit: 'µs', server: plait.kind, value: cpu, better: 'lower' },
    );
  }
  return figures;
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, { events: { type: 'string' }, pending: { type: 'string' }, held: { type: 'string' }, writes: { type: 'string' }, concurrency: { type: 'string' }, activities: { type: 'string' }, fanout: { type: 'string' }, 'dead-keys': { type: 'string' }, 'dead-endpoints': { type: 'string' }, 'dead-only': { type: 'boolean' }, profile: { type: 'boolean' } });
    const dir = profileDir(values);
    const kinds = servers(values, ['plait']);
    const kind = kinds[0];
    if (kinds.length !== 1 || (kind !== 'plait' && kind !== 'plait-base')) throw new Error('--server takes one of plait, plait-base');
    const figures = await runDelivery({
      events: num(values, 'events', 2000, 1),
      pending: num(values, 'pending', 1000, 1),
      held: num(values, 'held', 5000, 10),
      writes: num(values, 'writes', 400, 10),
      concurrency: num(values, 'concurrency', 8, 1, 256),
      activities: num(values, 'activities', 20_000, 100),
      fanout: num(values, 'fanout', 1000, 1),
      deadKeys: num(values, 'dead-keys', 4, 1, 100),
      deadEndpoints: num(values, 'dead-endpoints', 2, 1, 100),
      deadOnly: values['dead-only'] === true,
    }, dir, kind);
    reportProfiles(dir);
    for (const figure of figures) emit(figure);
    finish(figures);
  });
}
