// Tests drain: SIGTERM a document's owner (and the worker) mid-edit; clients reconnect elsewhere, nothing acknowledged is lost, the worker role moves.
import t from 'tap';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { balancer } from '../helpers/balancer.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { startReceiver } from '../helpers/receiver.js';
import { connect, editorOf, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';
import { holdsWorker as holds, nodeEnv, resynced } from '../helpers/cluster.js';

t.test('SIGTERM the owner mid-edit: clients reconnect elsewhere, acknowledged writes and committed updates survive, the worker role moves', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const receiver = await startReceiver(t);
  const dataDir = t.testdir();
  const env = (nodeId: string): Record<string, string> => nodeEnv(dataDir, nats.url, nodeId, { CLUSTER_LEASE_MS: '3000' });
  const nodes: ServerProcess[] = [];
  for (const id of ['d1', 'd2', 'd3']) nodes.push(await startServerProcess(t, env(id)));
  const [d1, d2, d3] = nodes as [ServerProcess, ServerProcess, ServerProcess];
  t.ok(holds(d1) && !holds(d2) && !holds(d3), 'the first node holds the worker role');
  const url = (node: ServerProcess): string => `http://127.0.0.1:${node.port}`;
  // The load balancer a deployment puts in front: d1 first, then whichever node still accepts connections.
  const front = `http://127.0.0.1:${await balancer(t, nodes.map((node) => node.port))}`;
  const api = new ApiClient(front);
  const credentials: Credentials = await new ApiClient(url(d1)).createWorkspace();
  await api.call(credentials, '/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  // Comment events only: the stores the drained node held also raise crdt.update_data at its stop (docs/delivery.md).
  await api.call(credentials, '/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook`, filterTypes: ['comment_annotation.add'] });

  const room: Room = { organizationId: 'org', documentId: 'drained', editorId: 'main' };
  const token = (): Promise<string> => userToken(api, credentials, [editorOf(room)]);
  // One client through the balancer (so on d1, which takes the document), one on d2 (relayed to d1).
  const onOwner = connect(t, front, room, await token());
  await synced(onOwner);
  const relayed = connect(t, url(d2), room, await token());
  await synced(relayed);
  const clients = [onOwner, relayed];
  onOwner.text.insert(0, '[a1]');
  relayed.text.insert(0, '[b1]');
  const has = (...parts: string[]) => (): boolean => clients.every((client) => parts.every((part) => client.text.toString().includes(part)));
  await whenDocs(clients.map((client) => client.doc), has('[a1]', '[b1]'));
  for (const i of [0, 1, 2, 3]) {
    const added = await new ApiClient(url(d3)).call(credentials, '/v2/crdt/add', { ...room, editorId: `rest-${i}`, type: 'text', data: i === 0 ? 'acked before' : 'first' });
    t.equal(added.status, 200, `a REST write forwarded to the owner was acknowledged before the stop (rest-${i})`);
  }

  // A client retrying through the balancer, as a user of a draining cluster would: UNAVAILABLE (503) or a refused
  // connection means "again"; anything else is the answer.
  const write = async (editorId: string, data: string): Promise<number> => {
    for (;;) {
      try {
        const answer = await api.call(credentials, '/v2/crdt/update', { ...room, editorId, type: 'text', data });
        if (answer.status !== 503) return answer.status;
      } catch (error) {
        t.comment(`retrying ${editorId}: ${String(error)}`);
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };

  const reconnected = clients.map((client) => resynced(client));
  d1.child.kill('SIGTERM');
  // Mid-edit: both clients type while d1 drains, and REST writes are in flight.
  onOwner.text.insert(onOwner.text.length, '[a2]');
  relayed.text.insert(0, '[b2]');
  const rest = await Promise.all([1, 2, 3].map((i) => write(`rest-${i}`, `written during the drain ${i}`)));
  t.same(rest, [200, 200, 200], 'every REST write made during the drain was acknowledged (after retries)');
  t.equal(await d1.exited, 0, 'd1 stopped cleanly');
  t.match(d1.stdout(), /stopped cleanly/);

  await Promise.all(reconnected);
  t.pass('both clients reconnected, the one of the stopped node through the balancer to another node');
  await whenDocs(clients.map((client) => client.doc), has('[a1]', '[b1]', '[a2]', '[b2]'));
  onOwner.text.insert(0, '[a3]');
  await whenDocs(clients.map((client) => client.doc), has('[a1]', '[b1]', '[a2]', '[b2]', '[a3]'));
  t.pass('every edit made before and during the drain is there, and they converge through the new owner');

  const read = async (editorId: string): Promise<unknown> => (await new ApiClient(url(d3)).call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...room, editorId })).body.result?.data.map((record) => record.data);
  t.same(await read('rest-0'), ['acked before'], 'the write acknowledged before the stop is there');
  for (const i of [1, 2, 3]) t.same(await read(`rest-${i}`), [`written during the drain ${i}`], `the write acknowledged during the drain (${i}) is there`);
  const main = (await read('main')) as string[];
  t.ok(['[a1]', '[b1]', '[a2]', '[b2]', '[a3]'].every((part) => main[0]?.includes(part)), 'and the sync edits are in the store the new owner serves');

  // The worker role moved on with the stop: a comment now is delivered by the new worker. The role is taken at the
  // next node's scan after the release, so its log line may come after everything above.
  await new Promise<void>((resolve) => {
    const check = (): void => {
      if (![d2, d3].some(holds)) return;
      for (const node of [d2, d3]) node.child.stdout.off('data', check);
      resolve();
    };
    for (const node of [d2, d3]) node.child.stdout.on('data', check);
    check();
  });
  t.equal([d2, d3].filter(holds).length, 1, 'another node took the worker role');
  await api.call(credentials, '/v2/commentannotations/add', { organizationId: 'org', documentId: 'after-drain', commentAnnotations: [{ annotationId: 'after', commentData: [{ commentText: 'still delivered', from: { userId: 'alice' } }] }] });
  const [delivered] = await receiver.waitFor(1);
  t.match(delivered?.body, /still delivered/, 'an event written after the drain was delivered by the new worker');
  for (const node of [d2, d3]) node.child.kill('SIGTERM');
  for (const node of [d2, d3]) t.equal(await node.exited, 0);
});
