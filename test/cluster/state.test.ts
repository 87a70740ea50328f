// Tests durable state in JetStream: three nodes with separate DATA_DIRs share workspaces and comments, and a node rebuilds an empty or dirty cache from the stream.
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import WebSocket from 'ws';
import { workspaceHeaders } from '../helpers/api.js';
import { delayProxy } from '../helpers/delay-proxy.js';
import { editorOf, roomName, syncBase, userToken } from '../helpers/sync.js';

/** Resolves when `node`'s applier next brings in other nodes' writes to `db`. */
const appliedOn = (node: TestServer, db: string): Promise<void> =>
  new Promise((resolve) => node.server.services.store.onReplicatedChange((changed) => changed.has(db as never) && resolve()));

const scope = { organizationId: 'org-state', documentId: 'doc-state' };
const comment = (annotationId: string, text: string): unknown => ({
  ...scope,
  commentAnnotations: [{ annotationId, commentData: [{ commentText: text, from: { userId: 'alice', name: 'Alice', email: 'alice@example.com' } }] }],
});
const texts = (body: unknown): string[] =>
  ((body as { result?: { data?: Array<{ annotationId: string; comments?: Array<{ commentText: string }> }> } }).result?.data ?? []).map(
    (annotation) => `${annotation.annotationId}: ${annotation.comments?.map((c) => c.commentText).join('|') ?? ''}`,
  );

t.test('three nodes on separate DATA_DIRs: a workspace created on one works on every node, a comment added on one is read on the others', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const node = (nodeId: string): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey: 'a'.repeat(64) }, `${root}/${nodeId}`);
  const nodes = [await node('s1'), await node('s2'), await node('s3')];
  const [s1, s2, s3] = nodes;
  if (s1 === undefined || s2 === undefined || s3 === undefined) throw new Error('three nodes');

  const credentials = await s1.api.createWorkspace();
  for (const [i, n] of nodes.entries()) {
    const domains = await n.api.call(credentials, '/v2/workspace/apikeyconfig/get', {});
    t.equal(domains.status, 200, `the API key created on s1 authenticates on s${i + 1} at once`);
  }
  const added = await s2.api.call(credentials, '/v2/commentannotations/add', comment('a1', 'written through s2'));
  t.equal(added.status, 200, 'a comment added through s2');
  const read = await s3.api.call(credentials, '/v2/commentannotations/get', scope);
  t.equal(read.status, 200);
  t.same(texts(read.body), ['a1: written through s2'], 'read through s3');

  // Caches other nodes' writes make stale: s2 has the API key's identity and its domain list cached; s1 changes both.
  t.same((await s2.api.call<{ domains: string[] }>(credentials, '/v2/workspace/domains/get', {})).body.result?.data.domains ?? [], [], 's2 reads (and caches) no domains');
  const domainsApplied = appliedOn(s2, DB.domains);
  t.equal((await s1.api.call(credentials, '/v2/workspace/domains/add', { domains: ['example.com'] })).status, 200);
  await domainsApplied;
  t.same((await s2.api.call<{ domains: string[] }>(credentials, '/v2/workspace/domains/get', {})).body.result?.data.domains, ['example.com'], "s2's domain cache was dropped");
  // Which events s2 writes to its outbox follows the delivery configs (src/delivery/audience.ts), written on s1 here.
  t.equal(s2.server.services.outbox.wants(credentials.apiKey, 'comment.add'), false, 's2 keeps the answer that no channel wants comment events');
  const configApplied = appliedOn(s2, DB.deliveryConfigs);
  t.equal((await s1.api.call(credentials, '/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } })).status, 200);
  await configApplied;
  t.equal(s2.server.services.outbox.wants(credentials.apiKey, 'comment.add'), true, "s2's kept answer was dropped with s1's config change");
  const tokenApplied = appliedOn(s2, DB.authTokenIndex);
  const reset = await s1.api.post('/v2/workspace/authtoken/reset', { apiKey: credentials.apiKey }, workspaceHeaders(credentials));
  t.equal(reset.status, 200, 'the auth token is reset on s1');
  await tokenApplied;
  t.equal((await s2.api.call(credentials, '/v2/workspace/apikeyconfig/get', {})).status, 403, "the old token no longer authenticates on s2 (its identity cache was dropped)");

  const metrics = await (await fetch(`${s3.url}/metrics`)).text();
  const applied = Number(/^plait_cluster_state_applied_seq (\d+)$/m.exec(metrics)?.[1]);
  t.ok(applied > 0, `s3's metrics show the applied stream position (${applied})`);
  t.match(metrics, /^plait_cluster_state_refusing 0$/m, 'and that writes are not refused');
  t.match(metrics, /^plait_cluster_state_lag \d+$/m, 'and the applier\'s lag behind the stream');
  // The backlog gauges read row counts through the cluster's recording wrapper of each database.
  t.match(metrics, /^plait_outbox_events \d+$/m, 'the outbox backlog as this node\'s cache has it');
  t.match(metrics, /^plait_delivery_jobs_pending \d+$/m, 'the pending deliveries as this node\'s cache has them');

  // Each node keeps its own LMDB: the rows are in s3's cache too, not only reachable through the owner.
  await s3.server.stop();
  const cache = Store.open(`${root}/s3`);
  t.ok(cache.records<unknown>(DB.workspaces).get(credentials.workspaceId), "the workspace is in s3's own cache");
  await cache.close();
  // The nodes stop while NATS is up (teardown would stop NATS first and make them wait out their timeouts).
  await s2.server.stop();
  await s1.server.stop();
});

t.test('a node restarted with an empty, then a dirty, DATA_DIR rebuilds from the stream; two nodes cannot share one', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const config = (nodeId: string) => ({ natsUrl: nats.url, nodeId, secretKey: 'b'.repeat(64) });
  const r1 = await startTestServer(t, config('r1'), `${root}/r1`);
  const r2 = await startTestServer(t, config('r2'), `${root}/r2`);
  await t.rejects(startTestServer(t, config('r3'), `${root}/r2`), /every node needs its own DATA_DIR/, 'a second node on one DATA_DIR is refused');
  // A DATA_DIR of single-process mode is refused, and left as it was.
  const single = Store.open(`${root}/single`);
  await single.transaction(() => void single.records<unknown>(DB.domains).put(['k'], ['example.com']));
  await single.close();
  await t.rejects(startTestServer(t, config('r4'), `${root}/single`), /holds data written outside cluster mode/, 'single-process data is refused');
  const untouched = Store.open(`${root}/single`);
  t.equal(untouched.records<unknown>(DB.meta).get('clusterCache'), undefined, 'no cache marker was written');
  await untouched.close();

  const credentials = await r1.api.createWorkspace();
  t.equal((await r2.api.call(credentials, '/v2/commentannotations/add', comment('b1', 'before'))).status, 200);
  await r2.server.stop();

  // An empty DATA_DIR: everything comes back from the stream.
  const fresh = await startTestServer(t, config('r2'), `${root}/fresh`);
  t.same(texts((await fresh.api.call(credentials, '/v2/commentannotations/get', scope)).body), ['b1: before'], 'an empty cache is built from the stream');
  await fresh.server.stop();

  // A dirty cache (the node died between a local commit and the acknowledgement): a row the stream never had is wiped.
  const dirty = Store.open(`${root}/fresh`);
  await dirty.transaction(() => {
    void dirty.records<unknown>(DB.meta).put('clusterCache', { ...(dirty.records<{ stream: string }>(DB.meta).get('clusterCache') as object), dirty: true });
    void dirty.records<unknown>(DB.domains).put([credentials.apiKey], ['never-acknowledged.example']);
  });
  await dirty.close();
  // A stale lock of a process that is gone is taken over (kill -9 leaves the file behind).
  writeFileSync(`${root}/fresh/cluster.lock`, '999999999');
  const rebuilt = await startTestServer(t, config('r2'), `${root}/fresh`);
  const domains = await rebuilt.api.call<{ domains?: string[] }>(credentials, '/v2/workspace/domains/get', {});
  t.equal(domains.status, 200);
  t.notMatch(JSON.stringify(domains.body), /never-acknowledged/, 'the unacknowledged row is gone');
  t.same(texts((await rebuilt.api.call(credentials, '/v2/commentannotations/get', scope)).body), ['b1: before'], 'and the acknowledged ones are back');
  await rebuilt.server.stop();
  await r1.server.stop();
});

t.test('a lookup that misses catches up first: a node whose NATS link lags still knows a key created elsewhere at once', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  // Everything between n2 and NATS takes 300 ms each way, so n2's applier is far behind n1's acknowledgements.
  const slow = await delayProxy(t, nats.port, 300);
  const config = { secretKey: 'c'.repeat(64), clusterLeaseMs: 5_000 };
  const n1 = await startTestServer(t, { ...config, natsUrl: nats.url, nodeId: 'm1' }, `${root}/m1`);
  const n2 = await startTestServer(t, { ...config, natsUrl: `nats://127.0.0.1:${slow}`, nodeId: 'm2' }, `${root}/m2`);
  const credentials = await n1.api.createWorkspace();
  const missed: string[] = [];
  n2.server.services.store.onReplicatedChange((changed) => changed.has(DB.apiKeys) && missed.push('applied'));
  const first = await n2.api.call(credentials, '/v2/workspace/apikeyconfig/get', {});
  t.equal(first.status, 200, 'the key created on n1 a moment ago authenticates on n2');
  t.same(missed, ['applied'], 'n2 applied it while answering (the lookup missed, caught up, and ran again)');

  // A sync socket on n2 for a key n2 has not applied yet is admitted after a catch-up.
  const other = await n1.api.createWorkspace();
  const room = { organizationId: 'org', documentId: 'fresh-key', editorId: 'main' };
  const token = await userToken(n1.api, other, [editorOf(room)]);
  const socket = new WebSocket(`${syncBase(n2.url)}/${roomName(room)}?token=${encodeURIComponent(token)}`);
  const outcome = await new Promise<string>((resolve) => {
    socket.on('open', () => resolve('open'));
    socket.on('unexpected-response', (_request, response) => resolve(`refused ${response.statusCode}`));
  });
  socket.terminate();
  t.equal(outcome, 'open', 'the socket is admitted');
  await n2.server.stop();
  await n1.server.stop();
});

t.test('records written with the change (activity log, a notification sent at once) reach the other nodes with it', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const node = (nodeId: string): Promise<TestServer> => startTestServer(t, { natsUrl: nats.url, nodeId, secretKey: 'c'.repeat(64) }, `${root}/${nodeId}`);
  const n1 = await node('n1');
  const n2 = await node('n2');
  const credentials = await n1.api.createWorkspace();
  const configsApplied = appliedOn(n2, DB.deliveryConfigs);
  t.equal((await n1.api.call(credentials, '/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } })).status, 200);
  t.equal((await n1.api.call(credentials, '/v2/workspace/notificationconfig/update', { useNotificationService: true })).status, 200);
  await configsApplied;
  // Either node may own the document; n1 reads its own cache, which has the records at once or once its applier brings them.
  const recordsApplied = appliedOn(n1, DB.activities);
  const mention = { ...scope, commentAnnotations: [{ annotationId: 'r1', commentData: [{ commentText: '@bob look', from: { userId: 'alice' }, taggedUserContacts: [{ text: '@bob', userId: 'bob', contact: { userId: 'bob', name: 'Bob', email: 'bob@example.com' } }] }] }] };
  t.equal((await n2.api.call(credentials, '/v2/commentannotations/add', mention)).status, 200, 'a comment that mentions bob, through n2');
  const activities = async (): Promise<unknown[]> => (await n1.api.call<unknown[]>(credentials, '/v2/activities/get', { organizationId: scope.organizationId })).body.result?.data ?? [];
  if ((await activities()).length === 0) await recordsApplied;
  t.equal((await activities()).length, 1, "the comment's activity record, read through n1");
  const forBob = (await n1.api.call<unknown[]>(credentials, '/v1/notifications/get', { ...scope, userId: 'bob' })).body.result?.data ?? [];
  t.equal(forBob.length, 1, 'and its notification to bob, written in the same transaction');
  for (const n of [n1, n2]) t.same(n.server.services.outbox.read(), [], 'no outbox row on either node: nothing for a dispatcher to plan');
  await n2.server.stop();
  await n1.server.stop();
});
