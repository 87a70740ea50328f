// Tests SIGKILL of a relaying node: the owner's ping finds it gone, detaches its connections and removes their awareness.
import t from 'tap';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess } from '../helpers/process.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';

/** Resolves when `check` holds on the client's awareness, re-checking at every awareness change (no polling). */
function whenAwareness(client: Client, check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const probe = (): void => {
      if (!check()) return;
      client.provider.awareness.off('change', probe);
      resolve();
    };
    client.provider.awareness.on('change', probe);
    probe();
  });
}

t.test('SIGKILL a relaying node: the owner detaches its connections and their awareness goes away', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const dataDir = t.testdir();
  const SECRET_KEY = 'b'.repeat(64);
  // The owner runs in this process (its actor is inspected); the relaying node is a process of its own, to be killed.
  const owner = await startTestServer(t, { natsUrl: nats.url, nodeId: 'owner', secretKey: SECRET_KEY, clusterLeaseMs: 1000 }, `${dataDir}/owner`);
  const relay = await startServerProcess(t, {
    DATA_DIR: `${dataDir}/relaying`,
    NATS_URL: nats.url,
    SECRET_KEY,
    NODE_ID: 'relaying',
    CLUSTER_LEASE_MS: '1000',
    DEV_BOOTSTRAP: 'false',
    LOG_LEVEL: 'info',
  });
  const credentials = await owner.api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'relay-killed', editorId: 'main' };
  const key = { apiKey: credentials.apiKey, ...room };
  const token = (): Promise<string> => userToken(owner.api, credentials, [editorOf(room)]);

  const onOwner = connect(t, owner.url, room, await token());
  await synced(onOwner);
  const relayed = connect(t, `http://127.0.0.1:${relay.port}`, room, await token());
  await synced(relayed);
  const actor = owner.server.services.documentActors.peek(key);
  t.ok(actor, 'the owner holds the document');
  t.equal(actor?.connections().length, 2, 'the relayed connection is attached to the owner as a remote peer');

  const relayedClientId = relayed.doc.clientID;
  relayed.provider.awareness.setLocalStateField('user', { name: 'relayed' });
  await whenAwareness(onOwner, () => onOwner.provider.awareness.getStates().get(relayedClientId)?.['user'] !== undefined);
  t.pass("the owner's client sees the relayed client's awareness");
  relayed.text.insert(0, 'typed through the relay');
  await whenDocs([onOwner.doc], () => onOwner.text.toString() === 'typed through the relay');

  // Killed: nothing is said to the owner. The owner's ping (every third of the lease time) gets "no responders".
  const gone = whenAwareness(onOwner, () => !onOwner.provider.awareness.getStates().has(relayedClientId));
  relay.child.kill('SIGKILL');
  await relay.exited;
  relayed.provider.destroy();
  await gone;
  t.pass("the relayed client's awareness was removed on the owner's clients");
  t.same(
    owner.server.services.documentActors.peek(key)?.connections().map((peer) => peer.sessionId).length,
    1,
    'only the local connection is left attached',
  );
  const read = await owner.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.same(read.body.result?.data.map((record) => record.data), ['typed through the relay'], "the relayed client's edit is kept at the owner");
});
