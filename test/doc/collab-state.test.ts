// Tests src/doc/collab-state.ts with real document actors: release on unload, reads after commit, live messages only to listeners.
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { CollabDocuments, type LiveMessage } from '../../src/doc/collab-state.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { Outbox } from '../../src/events/outbox.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { FakeHub } from '../helpers/fake-peer.js';
import { collectGarbage } from '../helpers/gc.js';

const ref = { apiKey: 'k1', organizationId: 'org', documentId: 'doc' };

function open(t: Test, options: { docIdleUnloadMs?: number; deferMs?: number } = {}) {
  const dir = t.testdir();
  const store = Store.open(dir, { deferMs: options.deferMs ?? 0 });
  const config = loadConfig({}, [], { dataDir: dir, docIdleUnloadMs: options.docIdleUnloadMs ?? 60_000, groupCommitMs: 0 });
  const registry = new DocumentActors(config, store, createLogger('silent'), new FakeHub());
  const encoded: LiveMessage[] = [];
  const docs = new CollabDocuments({
    store,
    outbox: new Outbox(store),
    now: Date.now,
    offlineTtlMs: 60_000,
    actors: registry,
    encode: (message) => {
      encoded.push(message);
      return new Uint8Array([100]);
    },
    log: createLogger('silent'),
  });
  t.teardown(async () => {
    docs.close();
    await registry.shutdown();
    await store.close();
  });
  return { store, registry, docs, encoded };
}

t.test('an unloaded document keeps no expiry timer, so neither its actor nor its state stays in memory', async (t) => {
  const { registry, docs } = open(t, { docIdleUnloadMs: 0 });
  const unloaded = new Promise<void>((resolve) => registry.onUnloaded(() => resolve()));
  // A user set offline arms the document's expiry timer, due in 60 s.
  await docs.presence(ref, (state) => state.upsert([{ userId: 'u1', status: 'offline' }]));
  // Only a weak reference stays in this test.
  const actor = ((loaded = registry.peek(ref)) => new WeakRef(loaded ?? {}))();
  t.ok(actor.deref() !== undefined && registry.loadedCount === 1, 'the document is loaded');
  t.equal(docs.armedTimers, 1, 'the offline user armed a timer');
  await unloaded;
  t.equal(registry.loadedCount, 0, 'the idle document unloaded');
  t.equal(docs.armedTimers, 0, 'its timer went with it');
  const gc = collectGarbage();
  if (gc === undefined) {
    t.pass('the unloaded actor was collected', { skip: 'this Node cannot expose gc, so collection is not checked' });
    return;
  }
  // WeakRef targets live at least until the current job ends: collect on the next turn.
  await new Promise<void>((resolve) => setImmediate(resolve));
  gc();
  t.equal(actor.deref(), undefined, 'the unloaded actor was collected');
  const reloaded = await docs.read(ref, (doc) => doc.presence.list());
  t.match(reloaded, [{ userId: 'u1', status: 'offline' }], 'the offline user is read back from LMDB');
});

t.test('no live message is built while no connection takes them; one is once a connection does', async (t) => {
  const { docs, encoded } = open(t);
  await docs.presence(ref, (state) => state.upsert([{ userId: 'u1' }]));
  await docs.annotations(ref, async (state) => state.add([{ annotationId: 'a1', commentData: [{ commentText: 'hi', from: { userId: 'u1' } }] }]));
  t.same(encoded, [], 'nothing encoded: no socket of the document listens');
  await docs.connect(ref, { sessionId: 's1', userId: 'watcher', extensions: true });
  await docs.presence(ref, (state) => state.upsert([{ userId: 'u2' }]));
  t.match(encoded.at(-1), { snapshot: false, presence: { users: [{ userId: 'u2', status: 'online' }], removed: [] } });
  await docs.disconnect(ref, { sessionId: 's1', userId: 'watcher', extensions: true });
  const count = encoded.length;
  await docs.presence(ref, (state) => state.upsert([{ userId: 'u3' }]));
  t.equal(encoded.length, count, 'nothing encoded once the listener left');
});

t.test('a read answers only after the changes it saw have committed', async (t) => {
  const { docs, store } = open(t);
  const order: string[] = [];
  const group = store.group;
  const submit = group.submit.bind(group);
  group.submit = (change) =>
    submit({
      single: change.single === true,
      write: () => change.write(),
      settle: (error) => {
        order.push('committed');
        change.settle(error);
      },
    });
  const change = docs.presence(ref, (state) => state.upsert([{ userId: 'u1' }]));
  const read = docs.read(ref, (doc) => doc.presence.list().map((u) => u.userId)).then((users) => {
    order.push('read answered');
    return users;
  });
  await change;
  t.same(await read, ['u1'], 'the read saw the change');
  t.same(order.slice(0, 2), ['committed', 'read answered'], 'and answered after its commit');
});

t.test("a sync connection's presence waits for company; a load reads after its own document's deferred writes only", async (t) => {
  // A deferral window no test waits out: only a reader (or another change) makes a deferred write land.
  const { store, registry, docs } = open(t, { docIdleUnloadMs: 0, deferMs: 60_000 });
  const other = { ...ref, documentId: 'other' };
  const unloaded = new Promise<void>((resolve) => registry.onUnloaded((key) => key.documentId === ref.documentId && resolve()));
  // As the sync edge does: the listener is told inside the document's mailbox, and no lease waits for the write.
  const lease = await registry.acquire(ref);
  docs.connectionListener().joined({ sessionId: 's1', userId: 'u1', editorId: 'main', readOnly: false, extensions: false }, lease.actor);
  await lease.actor.run(() => undefined);
  await new Promise<void>((resolve) => setImmediate(resolve));
  t.equal(store.group.pending, 1, "the connection's presence waits in the group commit after its turn");

  // Another document's first load does not wait for it, nor make it land.
  t.same(await docs.read(other, (doc) => doc.presence.list()), [], 'the other document loads');
  t.equal(store.group.pending, 1, "the other document's load left the deferred write waiting");

  // The document unloads (idle) while its write still waits; loading it again reads after that write has landed.
  lease.release();
  await unloaded;
  t.equal(store.group.pending, 1, 'still waiting when the document unloaded');
  const users = await docs.read(ref, (doc) => doc.presence.list());
  t.equal(store.group.pending, 0, 'the deferred write landed');
  // A load turns a connection's record offline (no connection outlives its document's load).
  t.match(users, [{ userId: 'u1', status: 'offline', source: 'sync' }], 'the load read what the deferred write wrote');
});
