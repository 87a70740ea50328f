// Tests that cluster nodes answer sync upgrades inside uWS's cork: claiming a document and relaying to its owner leave no cork warning on stderr.
import t from 'tap';
import { ApiClient } from '../helpers/api.js';
import { nodeEnv } from '../helpers/cluster.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { connect, editorOf, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

const WARNING = 'writes must be made from within a corked callback';

t.test('two nodes: the upgrade that claims a document and the one relayed to its owner print no uWS cork warning', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const dataDir = t.testdir();
  const c1 = await startServerProcess(t, nodeEnv(dataDir, nats.url, 'c1'));
  const c2 = await startServerProcess(t, nodeEnv(dataDir, nats.url, 'c2'));
  const url = (node: ServerProcess): string => `http://127.0.0.1:${node.port}`;
  const api = new ApiClient(url(c1));
  const credentials = await api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'corked', editorId: 'main' };
  const token = (): Promise<string> => userToken(api, credentials, [editorOf(room)]);

  // c1 claims the document's lease during this upgrade (a JetStream round trip before the actor exists); before
  // DeferredLease the 101 went out after it, uncorked.
  const owner = connect(t, url(c1), room, await token());
  await synced(owner);
  // c2 reads the lease, finds c1 and relays: another round trip before the connection has a target.
  const relayed = connect(t, url(c2), room, await token());
  await synced(relayed);
  // Frames the relayed client sends at once (SyncStep1, its edit) waited behind the upgrade and still arrive.
  relayed.text.insert(0, 'from c2');
  owner.text.insert(0, 'from c1, ');
  await whenDocs([owner.doc, relayed.doc], () => owner.text.toString() === relayed.text.toString() && owner.text.length === 'from c1, from c2'.length);
  t.pass(`both clients converge on "${owner.text.toString()}"`);
  // A second client on the owner finds the document leased here: the plain path.
  const second = connect(t, url(c1), room, await token());
  await synced(second);
  t.equal(second.text.toString(), owner.text.toString(), 'a later joiner on the owner holds the same text');

  for (const client of [owner, relayed, second]) client.provider.destroy();
  for (const node of [c2, c1]) {
    node.child.kill('SIGTERM');
    t.equal(await node.exited, 0, 'the node stops cleanly');
    await node.closed;
    t.notOk(node.stderr().includes(WARNING), `no cork warning on the stderr of a node: ${JSON.stringify(node.stderr().slice(0, 400))}`);
  }
});
