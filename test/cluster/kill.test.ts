// Tests SIGKILL of a document's owner in a three-process cluster: another node takes it within the lease time, nothing acknowledged is lost.
import t from 'tap';
import { ApiClient } from '../helpers/api.js';
import { nodeEnv } from '../helpers/cluster.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { connect, editorOf, synced, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';

/** Resolves at the client's next completed sync (after a reconnect). */
const resynced = (client: Client): Promise<void> =>
  new Promise((resolve) => {
    const onSync = (state: boolean): void => {
      if (!state) return;
      client.provider.off('sync', onSync);
      resolve();
    };
    client.provider.on('sync', onSync);
  });

t.test('SIGKILL the owner mid-edit: the relayed clients reconnect, another node owns the document, acknowledged writes are there', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const dataDir = t.testdir();
  const env = (nodeId: string): Record<string, string> => nodeEnv(dataDir, nats.url, nodeId);
  const nodes: ServerProcess[] = [];
  for (const id of ['k1', 'k2', 'k3']) nodes.push(await startServerProcess(t, env(id)));
  const [k1, k2, k3] = nodes;
  if (k1 === undefined || k2 === undefined || k3 === undefined) throw new Error('three nodes');
  const url = (node: ServerProcess): string => `http://127.0.0.1:${node.port}`;
  const api1 = new ApiClient(url(k1));
  const credentials = await api1.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'killed-owner', editorId: 'main' };
  const token = (): Promise<string> => userToken(api1, credentials, [editorOf(room)]);
  const onOwner = connect(t, url(k1), room, await token());
  await synced(onOwner);
  const relayed = [connect(t, url(k2), room, await token()), connect(t, url(k3), room, await token())];
  await Promise.all(relayed.map((client) => synced(client)));
  relayed[0]?.text.insert(0, 'typed on k2');
  await whenDocs([onOwner.doc], () => onOwner.text.toString() === 'typed on k2');
  // An acknowledged REST write through a relaying node (forwarded to k1): it answers after the commit.
  const written = await new ApiClient(url(k3)).call(credentials, '/v2/crdt/update', { ...room, type: 'text', data: 'typed on k2, then REST' });
  t.equal(written.status, 200, 'the REST write was acknowledged');

  const reconnected = relayed.map((client) => resynced(client));
  k1.child.kill('SIGKILL');
  await k1.exited;
  onOwner.provider.destroy();
  // Within the lease time the relaying nodes see the lease lapse, close their sockets, and the clients come back.
  await Promise.all(reconnected);
  await whenDocs(relayed.map((client) => client.doc), () => relayed.every((client) => client.text.toString() === 'typed on k2, then REST'));
  t.pass('both clients are back and hold the acknowledged state');
  relayed[1]?.text.insert(relayed[1].text.length, ' and more');
  await whenDocs(relayed.map((client) => client.doc), () => relayed.every((client) => client.text.toString() === 'typed on k2, then REST and more'));
  t.pass('they converge again through the new owner');
  const read = await new ApiClient(url(k2)).call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.same(read.body.result?.data.map((record) => record.data), ['typed on k2, then REST and more'], 'REST on a surviving node reads it all');
});
