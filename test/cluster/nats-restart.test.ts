// Tests a nats-server restart under two nodes: requests that need it answer UNAVAILABLE in the gap, nodes reconnect by themselves.
import t from 'tap';
import { startClusterNodes } from '../helpers/server.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';

t.test('kill and restart nats-server: UNAVAILABLE in the gap, then the nodes work again with nothing lost', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const natsDir = t.testdir();
  const nats = await startNats(t, bin, `${natsDir}/store`);
  const dataDir = `${natsDir}/plait`;
  const node = { natsUrl: nats.url, secretKey: 'e'.repeat(64), clusterLeaseMs: 10_000 };
  // One DATA_DIR in one process: the nodes share one Store (startClusterNodes says why).
  const [n1, n2] = await startClusterNodes(t, [{ ...node, nodeId: 'r1' }, { ...node, nodeId: 'r2' }], dataDir);
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();
  const room = { organizationId: 'org', documentId: 'through-restart', editorId: 'main' };
  t.equal((await n1.api.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'before' })).status, 200, 'n1 writes and owns the document');

  await nats.stop('SIGKILL');
  const gap = await n2.api.call(credentials, '/v2/crdt/get', { ...room, documentId: 'never-claimed' });
  t.equal(gap.status, 503, 'a document no node holds cannot be claimed without NATS');
  t.equal(gap.body.error?.status, 'UNAVAILABLE');

  const restarted = await startNats(t, bin, `${natsDir}/store`, nats.port);
  t.equal(restarted.port, nats.port, 'the same address, so the nodes reconnect by themselves');
  // The nodes reconnect on their own schedule; each attempt is a real request that waits on NATS, no sleep.
  let read = await n2.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  for (let attempt = 0; read.status === 503 && attempt < 20; attempt++) read = await n2.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.equal(read.status, 200, 'answered again after the restart (forwarded to the owner)');
  t.same(read.body.result?.data.map((record) => record.data), ['before'], 'the write from before the outage is there');
  // The nodes stop while NATS is up (teardown would stop NATS first and make them wait out their release timeouts).
  await n2.server.stop();
  await n1.server.stop();
});
