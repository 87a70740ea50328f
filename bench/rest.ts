// Owns the REST benchmark: autocannon against Update Presence and Add Comment Annotations, and the uWS hello-world ceiling.
import autocannon from 'autocannon';
import { finish, flags, main, num, profileDir, reportProfiles, servers } from './lib/cli.js';
import { plaitCredentials } from './lib/clients.js';
import { commitFloor } from './lib/commit-floor.js';
import { launchServer, protocolOf, type ServerHandle, type ServerKind } from './lib/launch.js';
import { emit, isMain, progress, type Figure } from './lib/report.js';

const USAGE = `node --import=tsx bench/rest.ts [flags]
  --connections C     concurrent HTTP connections (default 32)
  --pipelining P      requests in flight per connection (default 1)
  --duration S        measured seconds per operation (default 5)
  --warmup S          unmeasured seconds before each (default 1)
  --spread-docs D     also run Update Presence rotating over D documents, 1 to skip (default 100)
  --ops LIST          which operations: presence,comments (default both)
  --floor-batches N   with comments: the commit floor below HTTP, N batches per variant, 0 to skip (default 200)
  --floor-batch B     changes per batch of the commit floor (default 24)
  --profile           write and summarize a V8 CPU profile of the Plait server
  --server LIST       Plait builds to run, in turn: plait, plait-base (BENCH_BASE_DIST), plait-nopersist (default plait)`;

interface Load {
  readonly connections: number;
  readonly pipelining: number;
  readonly duration: number;
  readonly warmup: number;
}

interface Operation {
  readonly bench: string;
  readonly path: string;
  /** Requests rotate over this many distinct bodies (1 = the same request every time). */
  readonly variants: number;
  readonly body: (organizationId: string, variant: number) => unknown;
  /** A request made once before the operation is measured (and checked); it stays in effect for the operations after. */
  readonly setup?: { readonly path: string; readonly body: unknown };
}

const OPS = ['presence', 'comments'] as const;

const presence =
  (documents: number, statuses: readonly string[]) =>
  (organizationId: string, variant: number): unknown => ({
    organizationId,
    documentId: `rest-doc-${variant % documents}`,
    users: [{ userId: 'u1', status: statuses[variant % statuses.length] }],
  });

function operations(spread: number, only: ReadonlySet<string>): Operation[] {
  const presenceOps: Operation[] = [
    // the same status again and again: a heartbeat, which changes nothing and writes nothing (docs/comments-and-presence.md)
    { bench: 'REST Update Presence', path: '/v2/presence/update', variants: 1, body: presence(1, ['online']) },
    ...(spread > 1 ? [{ bench: `REST Update Presence, ${spread} docs`, path: '/v2/presence/update', variants: spread, body: presence(spread, ['online']) }] : []),
    // the status alternates, so (nearly) every request is a change written to LMDB before its reply
    { bench: 'REST Update Presence, status changes', path: '/v2/presence/update', variants: 2, body: presence(1, ['online', 'away']) },
  ];
  const comment = (organizationId: string): unknown => ({
    organizationId,
    documentId: 'rest-doc-0',
    commentAnnotations: [{ commentData: [{ commentText: 'x', from: { userId: 'u1' } }] }],
  });
  // A comment that mentions another user: one in-app notification to write when the service is on.
  const mention = (organizationId: string): unknown => ({
    organizationId,
    documentId: 'rest-doc-0',
    commentAnnotations: [{ commentData: [{ commentText: '@u2 x', from: { userId: 'u1' }, taggedUserContacts: [{ text: '@u2', userId: 'u2', contact: { userId: 'u2', name: 'U2', email: 'u2@example.com' } }] }] }],
  });
  const commentOps: Operation[] = [
    // A workspace with no delivery channel configured: the thread is written, its event is not (docs/delivery.md).
    { bench: 'REST Add Comment Annotations', path: '/v1/commentannotations/add', variants: 1, body: comment },
    // The configs stay, so these come last, in this order: each comment's activity record is written with it.
    {
      bench: 'REST Add Comment Annotations, activity log on',
      path: '/v1/commentannotations/add',
      variants: 1,
      body: comment,
      setup: { path: '/v2/workspace/activityconfig/update', body: { activityServiceConfig: { isEnabled: true } } },
    },
    // And its notification to the mentioned user (sent at once: no delay, no batching, the default).
    {
      bench: 'REST Add Comment Annotations with a mention, activity log and in-app notifications on',
      path: '/v1/commentannotations/add',
      variants: 1,
      body: mention,
      setup: { path: '/v2/workspace/notificationconfig/update', body: { useNotificationService: true } },
    },
  ];
  return [...(only.has('presence') ? presenceOps : []), ...(only.has('comments') ? commentOps : [])];
}

function bodies(op: Operation, organizationId: string): string[] {
  return Array.from({ length: op.variants }, (_, i) => JSON.stringify({ data: op.body(organizationId, i) }));
}

/** One autocannon run (after a warm-up run), with the server's CPU over the measured run. */
async function hammer(server: ServerHandle, bench: string, path: string, headers: Record<string, string>, body: readonly string[], load: Load): Promise<Figure[]> {
  let next = 0;
  const options = {
    url: `http://127.0.0.1:${server.port}${path}`,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...headers },
    body: body[0] ?? '',
    ...(body.length > 1 ? { requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, body: body[next++ % body.length] ?? '' }) }] } : {}),
    connections: load.connections,
    pipelining: load.pipelining,
    timeout: 10,
  };
  if (load.warmup > 0) await autocannon({ ...options, duration: load.warmup });
  const before = await server.stats();
  const clientBefore = process.cpuUsage();
  const result = await autocannon({ ...options, duration: load.duration });
  const after = await server.stats();
  const client = process.cpuUsage(clientBefore);
  const ok = result['2xx'];
  const failed = result.non2xx + result.errors + result.timeouts;
  const cpuMicros = after.cpuMicros - before.cpuMicros;
  const diskBytes = after.diskWriteBytes - before.diskWriteBytes;
  const detail = {
    load,
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    latency: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    serverCores: cpuMicros / 1e6 / result.duration,
    clientCores: (client.user + client.system) / 1e6 / result.duration,
  };
  progress(
    `${bench} on ${server.kind}: ${Math.round(ok / result.duration)} req/s ok, p50 ${result.latency.p50} ms p99 ${result.latency.p99} ms, ` +
      `${failed} failed, server ${detail.serverCores.toFixed(2)} cores, client ${detail.clientCores.toFixed(2)} cores, ` +
      `disk ${(diskBytes / 1024 / Math.max(1, ok)).toFixed(2)} KB written per request`,
  );
  const kind: ServerKind = server.kind;
  return [
    { bench, metric: 'requests/s', unit: 'req/s', server: kind, value: ok / result.duration, better: 'higher', detail },
    { bench, metric: 'latency p50', unit: 'ms', server: kind, value: result.latency.p50, better: 'lower' },
    { bench, metric: 'latency p99', unit: 'ms', server: kind, value: result.latency.p99, better: 'lower' },
    { bench, metric: 'server CPU / request', unit: 'µs', server: kind, value: cpuMicros / Math.max(1, ok), better: 'lower' },
    { bench, metric: 'failed requests', unit: 'count', server: kind, value: failed, better: 'lower' },
    ...(Number.isNaN(diskBytes) ? [] : [{ bench, metric: 'disk written / request', unit: 'KB', server: kind, value: diskBytes / 1024 / Math.max(1, ok), better: 'lower' as const }]),
  ];
}

/**
 * The plain comment row on the REST commit floor (bench/servers/rest-floor.ts): the least a committed comment write
 * does on this stack, the row's "floor" column.
 */
async function restFloor(op: Operation, load: Load): Promise<Figure[]> {
  const floor = await launchServer('rest-floor');
  try {
    const body = bodies(op, 'bench-org');
    // one checked request first, as for Plait: a benchmark of error replies would be worthless
    const res = await fetch(`http://127.0.0.1:${floor.port}${op.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body[0] ?? '' });
    if (res.status !== 200) throw new Error(`rest-floor answered ${res.status}: ${await res.text()}`);
    return await hammer(floor, op.bench, op.path, {}, body, load);
  } finally {
    await floor.stop();
  }
}

/** The commit floor's size (bench/lib/commit-floor.ts); batches 0 skips it. */
export interface FloorLoad {
  readonly batches: number;
  readonly batch: number;
}

export async function runRest(
  load: Load,
  spread: number,
  cpuProfileDir?: string,
  only: ReadonlySet<string> = new Set(OPS),
  floor: FloorLoad = { batches: 200, batch: 24 },
  plaitKinds: readonly ServerKind[] = ['plait'],
): Promise<Figure[]> {
  const figures: Figure[] = [];
  const ops = operations(spread, only);
  if (ops.length === 0) throw new Error(`--ops names none of ${OPS.join(', ')}`);
  const hello = await launchServer('uws-hello');
  try {
    // one ceiling run (the presence request); the same figures stand as the reference of every REST row
    const first = ops[0] as Operation;
    const ceiling = await hammer(hello, first.bench, first.path, {}, bodies(first, 'bench-org'), load);
    for (const op of ops) figures.push(...ceiling.map((figure) => ({ ...figure, bench: op.bench })));
  } finally {
    await hello.stop();
  }
  const plainComment = ops.find((op) => op.bench === 'REST Add Comment Annotations');
  if (plainComment !== undefined) figures.push(...(await restFloor(plainComment, load)));
  for (const kind of plaitKinds) {
    const plait = await launchServer(kind, cpuProfileDir === undefined ? {} : { cpuProfileDir });
    try {
      const { organizationId, headers } = await plaitCredentials(plait.port);
      /** One request that must answer 200. */
      const post = async (path: string, body: string): Promise<void> => {
        const res = await fetch(`http://127.0.0.1:${plait.port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
      };
      for (const op of ops) {
        if (op.setup !== undefined) await post(op.setup.path, JSON.stringify({ data: op.setup.body }));
        const body = bodies(op, organizationId);
        // one checked request first: a benchmark of error replies would be worthless
        await post(op.path, body[0] ?? '');
        figures.push(...(await hammer(plait, op.bench, op.path, headers, body, load)));
      }
      // let requests autocannon abandoned at its deadline finish before the server stops
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await plait.stop();
    }
  }
  // After the server run (which built dist/ and has stopped, so the two do not share the cores).
  if (only.has('comments') && floor.batches > 0) {
    const floorFigures = await commitFloor(floor);
    for (const figure of floorFigures) progress(`${figure.bench}: ${figure.value.toFixed(1)} µs CPU / change`);
    figures.push(...floorFigures);
  }
  return figures;
}

if (isMain(import.meta.url)) {
  main(async () => {
    const values = flags(USAGE, {
      connections: { type: 'string' },
      pipelining: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      'spread-docs': { type: 'string' },
      ops: { type: 'string' },
      'floor-batches': { type: 'string' },
      'floor-batch': { type: 'string' },
    });
    const load: Load = {
      connections: num(values, 'connections', 32, 1, 10_000),
      pipelining: num(values, 'pipelining', 1, 1, 100),
      duration: num(values, 'duration', 5, 1, 600),
      warmup: num(values, 'warmup', 1, 0, 60),
    };
    const prof = profileDir(values);
    const only = new Set(typeof values['ops'] === 'string' ? values['ops'].split(',') : OPS);
    const floor: FloorLoad = { batches: num(values, 'floor-batches', 200, 0, 100_000), batch: num(values, 'floor-batch', 24, 1, 10_000) };
    const kinds = servers(values, ['plait']);
    const notPlait = kinds.find((kind) => protocolOf(kind) !== 'plait');
    if (notPlait !== undefined) throw new Error(`--server ${notPlait}: REST runs only Plait builds (plait, plait-base, plait-nopersist)`);
    const figures = await runRest(load, num(values, 'spread-docs', 100, 1, 100_000), prof, only, floor, kinds);
    for (const figure of figures) emit(figure);
    reportProfiles(prof);
    finish(figures);
  });
}
