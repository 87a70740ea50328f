// Tests the document registry: shared first load, idle unload with final snapshot, shutdown, delete, viewers.
import t from 'tap';
import * as Y from 'yjs';
import type { Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { documentKeyString, type DocumentKey } from '../../src/document-key.js';
import { CLOSE } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';
import { leaseHoldingOwnership } from '../helpers/ownership.js';

const key = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };

/** Server frames reach the peers made with `hubPeer()` through one hub, as the App's publish reaches its sockets. */
const hub = new FakeHub();
const hubPeer = (sessionId: string): FakePeer => new FakePeer(sessionId, 'u1', 'main', hub);

function open(t: Test, dir: string, docIdleUnloadMs = 60_000): { store: Store; registry: DocumentActors } {
  const store = Store.open(dir);
  const config = loadConfig({}, [], { dataDir: dir, docIdleUnloadMs, groupCommitMs: 0 });
  const registry = new DocumentActors(config, store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  return { store, registry };
}

function textUpdate(text: string): Uint8Array {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, text);
  return Y.encodeStateAsUpdate(doc);
}

t.test('concurrent first joins share one load', async (t) => {
  const { registry } = open(t, t.testdir());
  let loads = 0;
  const load = registry.updateLog.snapshots.load.bind(registry.updateLog.snapshots);
  registry.updateLog.snapshots.load = (...args) => {
    loads++;
    return load(...args);
  };
  const leases = await Promise.all([registry.acquire(key), registry.acquire(key), registry.acquire(key)]);
  t.equal(loads, 1);
  t.ok(leases.every((lease) => lease.actor === leases[0]?.actor), 'one actor');
  t.equal(registry.loadedCount, 1);
  for (const lease of leases) lease.release();
});

t.test('an idle actor writes a final snapshot, unloads, and reloads with its content', async (t) => {
  const { store, registry } = open(t, t.testdir(), 0);
  const unloaded = new Promise<void>((resolve) => registry.onUnloaded(() => resolve()));
  const lease = await registry.acquire(key);
  const peer = hubPeer('s1');
  lease.actor.attach(peer, { type: 'text' });
  t.ok(lease.actor.receive(peer, { kind: 'update', update: textUpdate('kept') }));
  lease.actor.detach(peer);
  lease.release();
  await unloaded;
  t.equal(registry.loadedCount, 0, 'unloaded');
  const [persisted] = registry.updateLog.snapshots.load('key', 'org', 'doc');
  t.ok(persisted?.snapshot, 'a snapshot was written');
  t.equal(persisted?.updates.length, 0, 'and the log folded into it');
  const records = await registry.use(key, (actor) => actor.records());
  t.same(records.map((r) => [r.id, r.data, r.lastUpdatedBy, r.sessionId]), [['main', 'kept', 'u1', 's1']]);
  t.same([...store.binary(DB.docUpdates).getKeys()], [], 'no log entry is left in LMDB after the final snapshot');
});

t.test('shutdown closes connections with SERVICE_RESTART and keeps every change', async (t) => {
  const dir = t.testdir();
  const first = open(t, dir);
  const lease = await first.registry.acquire(key);
  const peer = hubPeer('s2');
  lease.actor.attach(peer);
  lease.actor.receive(peer, { kind: 'update', update: textUpdate('survives') });
  await first.registry.shutdown();
  t.equal(peer.closedWith, CLOSE.SERVICE_RESTART);
  await t.rejects(first.registry.acquire(key), { name: 'AppError', status: 'UNAVAILABLE' }, 'no new work after shutdown');
  await first.store.close();
  const second = open(t, dir);
  const records = await second.registry.use(key, (actor) => actor.records());
  t.equal(records[0]?.data, 'survives');
});

t.test('deleting the document evicts its actor without writing it back', async (t) => {
  const { registry } = open(t, t.testdir());
  const lease = await registry.acquire(key);
  const peer = hubPeer('s3');
  lease.actor.attach(peer);
  lease.actor.receive(peer, { kind: 'update', update: textUpdate('doomed') });
  lease.release();
  await registry.deleteDocumentData(key);
  t.equal(peer.closedWith, CLOSE.DOCUMENT_DELETED);
  t.same(registry.updateLog.snapshots.load('key', 'org', 'doc'), [], 'nothing left in LMDB');
  t.same(await registry.use(key, (actor) => actor.records()), [], 'a fresh, empty actor');
});

t.test('a deleted document is unloaded like an idle one: the unload listeners are told and its ownership released', async (t) => {
  const dir = t.testdir();
  const store = Store.open(dir);
  const config = loadConfig({}, [], { dataDir: dir, docIdleUnloadMs: 60_000, groupCommitMs: 0 });
  // Ownership as a cluster's leases hold it: claimed at load, given up at release.
  const { ownership, held } = leaseHoldingOwnership();
  const registry = new DocumentActors(config, store, createLogger('silent'), hub, ownership);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  const unloaded: string[] = [];
  registry.onUnloaded((ref) => unloaded.push(ref.documentId));
  const a: DocumentKey = { apiKey: 'key', organizationId: 'org', documentId: 'a' };
  const b: DocumentKey = { apiKey: 'key', organizationId: 'org', documentId: 'b' };
  const c: DocumentKey = { apiKey: 'key', organizationId: 'other', documentId: 'c' };
  for (const ref of [a, b, c]) (await registry.acquire(ref)).release();
  t.equal(held.size, 3, 'three documents loaded, three held');

  await registry.deleteDocumentData(a);
  t.same(unloaded, ['a'], 'deleting one document tells the unload listeners');
  t.same([...held].sort(), [documentKeyString(b), documentKeyString(c)].sort(), 'and gives its ownership up');
  await registry.deleteOrganizationData('key', 'org');
  await registry.deleteOrganizationData('key', 'other');
  t.same(unloaded.sort(), ['a', 'b', 'c'], 'so does deleting their organizations');
  t.equal(held.size, 0, 'nothing is held for documents that no longer exist');
  t.equal(registry.loadedCount, 0);

  // A document loaded again after its deletion is held anew, and given up at its own unload.
  (await registry.acquire(a)).release();
  t.equal(held.size, 1);
});

t.test('a viewer gets the read-only notice and its update is not applied', async (t) => {
  const { registry } = open(t, t.testdir());
  const lease = await registry.acquire(key);
  const viewer = hubPeer('s4');
  viewer.readOnly = true;
  lease.actor.attach(viewer);
  lease.actor.receive(viewer, { kind: 'update', update: textUpdate('nope') });
  await lease.actor.run(() => undefined);
  t.same(await lease.actor.records(), [], 'no store content');
  const authFrames = viewer.frames.filter((frame) => frame[0] === 2).map((frame) => frame[1]);
  t.same(authFrames, [1, 0], 'read-only notice on join, then one permission-denied');
  lease.release();
});
