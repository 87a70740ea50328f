// Tests the bench's sync clients against a real Plait server: a destroyed client leaves nothing that keeps its document in memory.
import t from 'tap';
import { connectClient, plaitCredentials, type SyncTarget } from '../../bench/lib/clients.js';
import { collectGarbage } from '../helpers/gc.js';
import { startTestServer } from '../helpers/server.js';

/** Connects, syncs, destroys; only a weak reference to the client's document leaves this function. */
async function connectAndDestroy(target: SyncTarget, documentId: string): Promise<WeakRef<object>> {
  const client = connectClient(target, documentId);
  await client.synced;
  client.doc.getText('content').insert(0, 'kept by nothing once destroyed');
  client.destroy();
  return new WeakRef(client.doc);
}

t.test("a destroyed client's document can be collected: its provider's awareness interval does not keep it", async (t) => {
  const { server } = await startTestServer(t);
  const { organizationId, token } = await plaitCredentials(server.port);
  const target: SyncTarget = { protocol: 'plait', port: server.port, plait: { organizationId, token } };
  const docs = [await connectAndDestroy(target, 'leak-1'), await connectAndDestroy(target, 'leak-2')];
  const gc = collectGarbage();
  if (gc === undefined) {
    t.pass('the documents were collected', { skip: 'this Node cannot expose gc, so collection is not checked' });
    return;
  }
  // The sockets finish closing a few turns later, and WeakRef targets live at least until the current job ends: collect
  // once a turn until both are gone. With the awareness interval still running they never go, and the bound ends it.
  const bound = Date.now() + 10_000;
  let turns = 0;
  while (docs.some((doc) => doc.deref() !== undefined) && Date.now() < bound) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    gc();
    turns++;
  }
  t.equal(docs.filter((doc) => doc.deref() !== undefined).length, 0, `both destroyed clients' documents were collected (after ${turns} turns)`);
});
