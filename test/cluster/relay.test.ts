// Tests three Plait nodes and one nats-server: sync clients of one document on different nodes converge through the owner.
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { startClusterNodes, type TestServer } from '../helpers/server.js';
import { connect, editorOf, resynced, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';

const SECRET_KEY = 'c'.repeat(64);

/** Three nodes on one nats-server, each with its own DATA_DIR (durable state lives in JetStream). */
async function cluster(t: Test, bin: string): Promise<TestServer[]> {
  const nats = await startNats(t, bin);
  const node = (nodeId: string): Partial<Config> => ({ natsUrl: nats.url, nodeId, secretKey: SECRET_KEY, clusterLeaseMs: 3000 });
  return startClusterNodes(t, ['n1', 'n2', 'n3'].map(node));
}

/** Stops the nodes while NATS is up (teardown stops NATS first, and the nodes would wait out their release timeouts). */
const stopAll = (nodes: readonly TestServer[]): Promise<unknown> => Promise.all(nodes.map((node) => node.server.stop()));

t.test('three nodes: clients of one document on different nodes converge, and one node owns it', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nodes = await cluster(t, bin);
  const [n1, n2, n3] = nodes;
  if (n1 === undefined || n2 === undefined || n3 === undefined) throw new Error('three nodes');
  const credentials = await n1.api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'shared-doc', editorId: 'main' };
  const token = (): Promise<string> => userToken(n1.api, credentials, [editorOf(room)]);
  const clients = [connect(t, n1.url, room, await token()), connect(t, n2.url, room, await token()), connect(t, n3.url, room, await token())];
  await Promise.all(clients.map((client) => synced(client)));
  const owners = [n1, n2, n3].filter((node) => node.server.services.documentActors.peek({ apiKey: credentials.apiKey, ...room }) !== undefined);
  t.equal(owners.length, 1, 'exactly one node loaded the document (the others relay)');

  clients.forEach((client, i) => client.text.insert(0, `[${i + 1}]`));
  const docs = clients.map((client) => client.doc);
  await whenDocs(docs, () => clients.every((client) => client.text.length === 9 && client.text.toString() === clients[0]?.text.toString()));
  t.pass(`all three converge on ${clients[0]?.text.toString()}`);

  // A REST write on each node reaches the sync clients on every node.
  for (const [i, node] of [n1, n2, n3].entries()) {
    const marker = `<rest ${i + 1}>`;
    const response = await node.api.call(credentials, '/v2/crdt/update', { ...room, type: 'text', data: `${clients[0]?.text.toString() ?? ''}${marker}` });
    t.equal(response.status, 200, `REST write on n${i + 1}: ${JSON.stringify(response.body.error ?? '')}`);
    await whenDocs(docs, () => clients.every((client) => client.text.toString().endsWith(marker)));
    t.pass(`the write on n${i + 1} reached the clients on all three nodes`);
  }
  await stopAll(nodes);
});

t.test('a graceful stop of the owner releases its lease: clients reconnect, another node takes the document, nothing is lost', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nodes = await cluster(t, bin);
  const [n1, n2, n3] = nodes;
  if (n1 === undefined || n2 === undefined || n3 === undefined) throw new Error('three nodes');
  const credentials = await n1.api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'handover', editorId: 'main' };
  const key = { apiKey: credentials.apiKey, ...room };
  const token = (): Promise<string> => userToken(n1.api, credentials, [editorOf(room)]);
  // The first client is on n1, so n1 takes the lease; the others relay through it.
  const first = connect(t, n1.url, room, await token());
  await synced(first);
  const relayed = [connect(t, n2.url, room, await token()), connect(t, n3.url, room, await token())];
  await Promise.all(relayed.map((client) => synced(client)));
  t.ok(n1.server.services.documentActors.peek(key), 'n1 owns the document');
  relayed[0]?.text.insert(0, 'before the stop');
  const docs = relayed.map((client) => client.doc);
  await whenDocs([first.doc, ...docs], () => [first, ...relayed].every((client) => client.text.toString() === 'before the stop'));

  // Registered before the stop: the relayed clients are closed with SERVICE_RESTART and reconnect to their own
  // nodes, one of which then owns it.
  const reconnected = relayed.map((client) => resynced(client));
  await n1.server.stop();
  await Promise.all(reconnected);
  const owners = [n2, n3].filter((node) => node.server.services.documentActors.peek(key) !== undefined);
  t.equal(owners.length, 1, 'exactly one of the remaining nodes owns it now');
  relayed[1]?.text.insert(relayed[1].text.length, ', and after');
  await whenDocs(docs, () => relayed.every((client) => client.text.toString() === 'before the stop, and after'));
  t.pass('the edit made before the stop is kept, and the remaining nodes converge on the next one');
  const rest = await n2.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.same(rest.body.result?.data.map((record) => record.data), ['before the stop, and after'], 'REST on a remaining node reads it');
  await stopAll(nodes);
});
