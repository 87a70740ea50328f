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
  const [n1, n2] = await startClusterNodes(t, [{ ...node, nodeId: 'r1' }, { ...node, nodeId: 'r2' }], dataDir);
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();
  const room = { organizationId: 'org', documentId: 'through-restart', editorId: 'main' };
  t.equal((await n1.api.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'before' })).status, 200, 'n1 writes and owns the document');
  const comment = (annotationId: string): unknown => ({ ...room, commentAnnotations: [{ annotationId, commentData: [{ commentText: annotationId, from: { userId: 'u' } }] }] });
  t.equal((await n2.api.call(credentials, '/v2/commentannotations/add', comment('acked-before'))).status, 200, 'a comment acknowledged before the outage');
  const second = await n1.api.createWorkspace();

  await nats.stop('SIGKILL');
  // A write on the owner in the gap commits locally but cannot reach the cluster log: not acknowledged.
  const unacked = await n1.api.call(credentials, '/v2/commentannotations/add', comment('in-the-gap'));
  t.equal(unacked.status, 503, 'a write in the gap is not acknowledged');
  t.equal(unacked.body.error?.status, 'UNAVAILABLE');
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
  const comments = await n2.api.call<Array<{ annotationId: string }>>(credentials, '/v2/commentannotations/get', { organizationId: room.organizationId, documentId: room.documentId });
  t.ok(comments.body.result?.data.some((a) => a.annotationId === 'acked-before'), 'the acknowledged comment is there');
  // A workspace acknowledged on n1 before the outage authenticates on n2, from n2's own cache.
  t.equal((await n2.api.call(second, '/v2/workspace/apikeyconfig/get', {})).status, 200, "the acknowledged workspace is in n2's cache");
  // Writes go ahead again once n1 has resent what waited in the gap (until then they are refused, 503, before they
  // commit); each attempt is a real request, no sleep.
  const deadline = Date.now() + 30_000;
  let third: Awaited<ReturnType<typeof n1.api.createWorkspace>> | undefined;
  while (third === undefined && Date.now() < deadline) {
    third = await n1.api.createWorkspace().catch((error: unknown) => {
      if (!/503|UNAVAILABLE|unreachable/.test(String(error))) throw error;
      return undefined;
    });
  }
  if (third === undefined) throw new Error('writes on n1 never went ahead after the restart');
  // The appliers resumed by themselves: a workspace created on n1 after the restart works on n2.
  t.equal((await n2.api.call(third, '/v2/workspace/apikeyconfig/get', {})).status, 200, "n2's applier follows the stream again");
  // The nodes stop while NATS is up (teardown would stop NATS first and make them wait out their release timeouts).
  await n2.server.stop();
  await n1.server.stop();
});
