// Tests the registry's lease-lost path end to end: another node takes a document's lease, the owner drops it, nothing is lost.
import { connect as natsConnect } from 'nats';
import t from 'tap';
import { LEASE_BUCKET, leaseKey } from '../../src/cluster/leases.js';
import { documentKeyString } from '../../src/document-key.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';

/** Resolves with the close code of the client's socket, and stops the client there so it holds no state to resend. */
function closedAndStopped(client: Client): Promise<number | undefined> {
  return new Promise((resolve) => {
    client.provider.once('connection-close', (event: { code?: number } | null) => {
      // Synchronously, before the provider schedules its reconnect.
      client.provider.destroy();
      resolve(event?.code);
    });
  });
}

t.test('a lease taken by another node: the owner closes with 1012 and drops the document; the new owner has every update', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const dataDir = t.testdir();
  // The group-commit window at its longest, so the updates are likely still queued when the lease goes (drop appends them).
  const node = (nodeId: string) => ({ natsUrl: nats.url, nodeId, secretKey: 'a'.repeat(64), clusterLeaseMs: 3000, groupCommitMs: 1000 });
  const [n1, n2] = await startClusterNodes(t, [node('first'), node('second')], dataDir);
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'lease-lost', editorId: 'main' };
  const key = { apiKey: credentials.apiKey, ...room };
  const token = (): Promise<string> => userToken(n1.api, credentials, [editorOf(room)]);

  const writer = connect(t, n1.url, room, await token());
  const reader = connect(t, n1.url, room, await token());
  await Promise.all([synced(writer), synced(reader)]);
  t.ok(n1.server.services.documentActors.peek(key), 'the first node owns the document');
  writer.text.insert(0, 'typed before the lease was lost');
  // The reader has it from the owner's fan-out, so the owner's actor applied it.
  await whenDocs([reader.doc], () => reader.text.toString() === 'typed before the lease was lost');

  // Another node's lease, written over the owner's: its next renewal (compare-and-set on its revision) fails.
  const closes = [closedAndStopped(writer), closedAndStopped(reader)];
  // Dropped = its last updates flushed to the log, which in cluster mode settles once the state stream has them.
  const dropped = new Promise<void>((resolve) => n1.server.services.documentActors.onUnloaded((unloaded) => unloaded.documentId === room.documentId && resolve()));
  const nc = await natsConnect({ servers: nats.url });
  t.teardown(() => nc.close());
  const kv = await nc.jetstream().views.kv(LEASE_BUCKET);
  await kv.put(leaseKey(documentKeyString(key)), new TextEncoder().encode(JSON.stringify({ node: 'second', expiresAt: Date.now() + 3000 })));

  t.same(await Promise.all(closes), [1012, 1012], "the owner closed the document's sockets with SERVICE_RESTART");
  await dropped;
  t.equal(n1.server.services.documentActors.peek(key), undefined, 'and no longer serves it');
  // No client holds the text any more: what the new owner reads comes from the store.
  const read = await n2.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.equal(read.status, 200, JSON.stringify(read.body.error ?? ''));
  t.same(read.body.result?.data.map((record) => record.data), ['typed before the lease was lost'], 'the new owner loads every update the old one had applied');
  t.ok(n2.server.services.documentActors.peek(key), 'the second node owns it now');
  const forwarded = await n1.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.same(forwarded.body.result?.data.map((record) => record.data), ['typed before the lease was lost'], 'the first node forwards to the new owner');
  await n2.server.stop();
  await n1.server.stop();
});
