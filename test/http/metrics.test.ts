import { readFileSync } from 'node:fs';
import t from 'tap';
import WebSocket from 'ws';
import { upgradeStatus, connect, editorOf, synced, syncBase, roomName, userToken, whenDocs, type Room } from '../helpers/sync.js';
import { parseExposition, sampleValue as value, type Exposition } from '../helpers/prometheus.js';
import { startTestServer } from '../helpers/server.js';

async function scrape(url: string): Promise<Exposition> {
  const response = await fetch(`${url}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  if (!/^text\/plain; version=0\.0\.4/.test(response.headers.get('content-type') ?? '')) throw new Error('not Prometheus text');
  return parseExposition(await response.text());
}

t.test('/metrics parses as Prometheus text and moves under REST and sync load', async (t) => {
  const { url, api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const before = await scrape(url);
  for (const name of [
    'plait_sync_connections',
    'plait_documents_loaded',
    'plait_sync_frames_in_total',
    'plait_sync_frames_sent_total',
    'plait_mailbox_depth',
    'plait_mailbox_shed_total',
    'process_cpu_seconds_total',
    // Event-loop delay: prom-client's measured at the scrape, and Plait's figures from its 1 s sampler (docs/observability.md).
    'nodejs_eventloop_lag_seconds',
    'nodejs_eventloop_lag_max_seconds',
    'nodejs_eventloop_lag_p99_seconds',
  ]) {
    t.ok(before.types.has(name), `${name} is exported`);
  }

  const scope = { organizationId: 'org-m', documentId: 'doc-m' };
  for (let i = 0; i < 5; i++) {
    const answer = await api.call(credentials, '/v2/presence/update', { ...scope, users: [{ userId: 'u1', status: `s${i}` }] });
    t.equal(answer.status, 200);
  }
  t.equal((await api.call(credentials, '/v2/presence/update', { ...scope })).status, 400);

  const room: Room = { organizationId: 'org-m', documentId: 'doc-sync', editorId: 'main' };
  const token = await userToken(api, credentials, [editorOf(room)]);
  const a = connect(t, url, room, token);
  const b = connect(t, url, room, token);
  await Promise.all([synced(a), synced(b)]);
  a.text.insert(0, 'hello');
  await whenDocs([b.doc], () => b.text.toString() === 'hello');

  const after = await scrape(url);
  const rest = { operation: '/v2/presence/update' };
  t.equal(value(after, 'plait_rest_requests_total', { ...rest, status: '200' }) - value(before, 'plait_rest_requests_total', { ...rest, status: '200' }), 5);
  t.equal(value(after, 'plait_rest_requests_total', { ...rest, status: '400' }) - value(before, 'plait_rest_requests_total', { ...rest, status: '400' }), 1);
  t.equal(value(after, 'plait_rest_request_seconds_count', rest) - value(before, 'plait_rest_request_seconds_count', rest), 6, 'the latency histogram counts every request');
  const buckets = after.samples.filter((s) => s.name === 'plait_rest_request_seconds_bucket' && s.labels['operation'] === rest.operation);
  t.ok(buckets.length > 2 && buckets.every((b, i) => i === 0 || b.value >= (buckets[i - 1]?.value ?? 0)), 'buckets are cumulative');
  t.equal(buckets.at(-1)?.labels['le'], '+Inf');
  t.equal(buckets.at(-1)?.value, value(after, 'plait_rest_request_seconds_count', rest), 'the +Inf bucket is the count');
  t.equal(value(after, 'plait_sync_connections'), 2);
  t.ok(value(after, 'plait_documents_loaded') >= 2, 'the presence document and the synced one are loaded');
  t.ok(value(after, 'plait_sync_frames_in_total') - value(before, 'plait_sync_frames_in_total') >= 3, 'sync steps and the update came in');
  t.ok(value(after, 'plait_sync_frames_sent_total') > value(before, 'plait_sync_frames_sent_total'), 'frames went out');
  t.ok(value(after, 'plait_group_commit_size_count', { log: 'rest' }) > value(before, 'plait_group_commit_size_count', { log: 'rest' }), 'REST writes went through group commits');
  t.ok(value(after, 'plait_sync_connections_opened_total') - value(before, 'plait_sync_connections_opened_total') >= 2);

  a.provider.destroy();
  b.provider.destroy();
});

t.test('every plait_* family a server exports is documented in docs/observability.md', async (t) => {
  const { url } = await startTestServer(t);
  const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
  const exported = [...(await scrape(url)).types.keys()].filter((name) => name.startsWith('plait_'));
  t.ok(exported.length > 20, `read the families (${exported.length})`);
  t.same(exported.filter((name) => !doc.includes(`\`${name}\``)), [], 'each is named in the metrics table');
});

t.test('METRICS_PORT moves /metrics to its own listener', async (t) => {
  const { url, server } = await startTestServer(t, { metricsPort: 0 });
  const port = server.metricsPort;
  if (port === undefined) throw new Error('no metrics port');
  t.not(port, server.port);
  const own = await fetch(`http://127.0.0.1:${port}/metrics`);
  t.equal(own.status, 200);
  t.match(await own.text(), /plait_sync_connections/);
  t.equal((await fetch(`${url}/metrics`)).status, 404, 'not on the main port');
});

t.test('/readyz is 200 while storage is usable and 503 once it is not', async (t) => {
  const { url, server } = await startTestServer(t);
  const ready = await fetch(`${url}/readyz`);
  t.equal(ready.status, 200);
  t.same(await ready.json(), { status: 'ready' });
  await server.services.store.close();
  const notReady = await fetch(`${url}/readyz`);
  t.equal(notReady.status, 503);
  t.match(await notReady.json(), { status: 'not ready', reason: /store is closing/ });
});

t.test('the sync endpoint takes the user token as the plait.token.<JWT> subprotocol and answers plait', async (t) => {
  const { url, api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const room: Room = { organizationId: 'org-p', documentId: 'doc-p', editorId: 'main' };
  const token = await userToken(api, credentials, [editorOf(room)]);
  const socket = new WebSocket(`${syncBase(url)}/${roomName(room)}`, ['plait', `plait.token.${token}`]);
  t.teardown(() => socket.terminate());
  const first = new Promise<Buffer>((resolve) => socket.once('message', (data: Buffer) => resolve(data)));
  await new Promise<void>((resolve, reject) => {
    socket.on('open', () => resolve());
    socket.on('error', reject);
  });
  t.equal(socket.protocol, 'plait', 'the answer is plait, never the token');
  t.equal((await first)[0], 0, 'the server starts the sync handshake');

  t.equal(await upgradeStatus(`${syncBase(url)}/${roomName(room)}`), 401, 'no token at all is 401');
});
