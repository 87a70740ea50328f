// Tests the loaded-documents budget on the registry with real LMDB: eviction order, the per-key share, bytes, connected documents, the refusal.
import t from 'tap';
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../src/config.js';
import type { DocumentOwnership } from '../../src/doc/ownership.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { documentKeyString, type DocumentKey } from '../../src/document-key.js';
import { createLogger } from '../../src/log.js';
import { budgetCounts, limitRefusals } from '../../src/metrics/instruments.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';
import { leaseHoldingOwnership } from '../helpers/ownership.js';

const hub = new FakeHub();
const NO_LIMITS = { maxLoadedDocuments: 0, maxLoadedDocumentsPerKey: 0, maxLoadedDocumentBytes: 0, maxLoadedDocumentBytesPerKey: 0 };

function open(t: Test, limits: Partial<Config>, ownership?: DocumentOwnership): { store: Store; registry: DocumentActors; unloaded: string[]; nextUnload: () => Promise<string> } {
  const dir = t.testdir();
  const store = Store.open(dir);
  // An idle unload an hour away: every unload seen here is the budget's.
  const config = loadConfig({}, [], { dataDir: dir, docIdleUnloadMs: 3_600_000, groupCommitMs: 0, ...NO_LIMITS, ...limits });
  const registry = new DocumentActors(config, store, createLogger('silent'), hub, ownership);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  const unloaded: string[] = [];
  let waiting: Array<(id: string) => void> = [];
  registry.onUnloaded((key) => {
    const id = `${key.apiKey}/${key.documentId}`;
    unloaded.push(id);
    const waiters = waiting;
    waiting = [];
    for (const resolve of waiters) resolve(id);
  });
  const nextUnload = (): Promise<string> => new Promise((resolve) => waiting.push(resolve));
  return { store, registry, unloaded, nextUnload };
}

const doc = (documentId: string, apiKey = 'k1'): DocumentKey => ({ apiKey, organizationId: 'org', documentId });
/** A REST write: the store is added through the actor, and answered once committed. */
const write = (registry: DocumentActors, key: DocumentKey, data: string): Promise<void> => registry.use(key, (actor) => actor.add('main', { type: 'text', data }));
const read = async (registry: DocumentActors, key: DocumentKey): Promise<unknown> => (await registry.use(key, (actor) => actor.records()))[0]?.data;

t.test('past MAX_LOADED_DOCUMENTS the least recently used idle document is unloaded first', async (t) => {
  const { registry, nextUnload } = open(t, { maxLoadedDocuments: 3 });
  for (const id of ['a', 'b', 'c']) await write(registry, doc(id), id);
  t.equal(registry.loadedCount, 3);
  t.equal(await read(registry, doc('a')), 'a', 'a is used again: b is now the least recently used');
  const unload = nextUnload();
  const earlyBefore = budgetCounts.unloadedEarly;
  await write(registry, doc('d'), 'd');
  t.equal(await unload, 'k1/b', 'b goes, not a');
  t.equal(budgetCounts.unloadedEarly, earlyBefore + 1, 'counted as unloaded early (plait_documents_unloaded_early_total)');
  t.equal(registry.loadedCount, 3, 'back within the budget');
  t.ok(registry.peek(doc('a')) && registry.peek(doc('c')) && registry.peek(doc('d')), 'the others stay loaded');
});

t.test('an API key past its share unloads its own documents, not another key\'s', async (t) => {
  const { registry, nextUnload, unloaded } = open(t, { maxLoadedDocumentsPerKey: 2, maxLoadedDocuments: 10 });
  await write(registry, doc('x', 'k1'), 'x');
  await write(registry, doc('p', 'k2'), 'p');
  await write(registry, doc('q', 'k2'), 'q');
  await write(registry, doc('y', 'k1'), 'y');
  t.same(unloaded, [], 'each key within its share');
  const unload = nextUnload();
  await write(registry, doc('z', 'k1'), 'z');
  t.equal(await unload, 'k1/x', "k1's least recently used document goes, though k2's p was used before it");
  t.ok(registry.peek(doc('p', 'k2')) && registry.peek(doc('q', 'k2')), "k2's documents stay loaded");
  t.equal(registry.loadedCount, 4);
});

t.test('past its share of bytes, a key\'s least recently used idle document is unloaded', async (t) => {
  const { registry, nextUnload } = open(t, { maxLoadedDocumentBytesPerKey: 3000 });
  await write(registry, doc('big1'), 'x'.repeat(2000));
  const unload = nextUnload();
  await write(registry, doc('big2'), 'y'.repeat(2000));
  t.equal(await unload, 'k1/big1', 'the second document put the key past 3000 bytes as stored');
  t.ok(registry.peek(doc('big2')), 'the one just written stays');
});

t.test('documents with a connection are never unloaded for the budget; a request that would load one more for that key is refused', async (t) => {
  const { registry, unloaded, nextUnload } = open(t, { maxLoadedDocumentsPerKey: 2, maxLoadedDocuments: 2 });
  // As a sync connection holds its document: a lease for as long as the socket is open, and the attached peer.
  const peers: FakePeer[] = [];
  for (const id of ['live1', 'live2']) {
    const lease = await registry.acquire(doc(id));
    const peer = new FakePeer(`s-${id}`, 'u1', 'main', hub);
    lease.actor.attach(peer);
    peers.push(peer);
    t.teardown(() => lease.release());
  }
  const refusedBefore = limitRefusals.loaded_documents_per_key;
  await t.rejects(write(registry, doc('rest'), 'no room'), { name: 'AppError', status: 'RESOURCE_EXHAUSTED', httpStatus: 429, retryAfterSeconds: 5, message: /2 loaded documents \(MAX_LOADED_DOCUMENTS_PER_KEY\)/ });
  t.equal(limitRefusals.loaded_documents_per_key, refusedBefore + 1, 'the refusal is counted (plait_limit_refusals_total)');
  t.notOk(registry.peek(doc('rest')), 'nothing was loaded for it');
  t.ok(peers.every((peer) => peer.closedWith === undefined), 'no connection was closed');

  // Another key is not refused; the process budget (2) is passed, and what goes is that key's idle document, never a connected one.
  const unload = nextUnload();
  await write(registry, doc('other', 'k2'), 'fits');
  t.equal(await unload, 'k2/other', 'the only document that could go is the one just written and released');
  t.same(unloaded, ['k2/other']);
  t.ok(registry.peek(doc('live1')) && registry.peek(doc('live2')), 'the connected documents stay');
  t.equal(await read(registry, doc('other', 'k2')), 'fits', 'and it reloads with its data');
});

t.test('a sync connection is never refused by the budget, even past the key\'s share', async (t) => {
  const { registry } = open(t, { maxLoadedDocumentsPerKey: 1 });
  const first = await registry.acquire(doc('s1'));
  const second = await registry.acquire(doc('s2'));
  t.teardown(() => (first.release(), second.release()));
  t.equal(registry.loadedCount, 2, 'both loaded: connections have limits of their own (MAX_CONNECTIONS_PER_KEY)');
});

t.test('an unloaded document reloads with every acknowledged change, from its final snapshot', async (t) => {
  const { store, registry, nextUnload } = open(t, { maxLoadedDocuments: 1 });
  await write(registry, doc('kept'), 'first');
  await registry.use(doc('kept'), (actor) => actor.update('main', { type: 'text', data: 'first, then second' }));
  const unload = nextUnload();
  await write(registry, doc('pusher'), 'pushes it out');
  t.equal(await unload, 'k1/kept');
  const [stored] = registry.updateLog.snapshots.load('k1', 'org', 'kept');
  t.ok(stored?.snapshot, 'a final snapshot was written');
  t.equal(stored?.updates.length, 0, 'folding the log');
  t.same([...store.binary(DB.docUpdates).getKeys({ start: ['k1', 'org', 'kept'], end: ['k1', 'org', 'kept', '\uffff'] })], [], 'no log row is left for it');
  t.equal(await read(registry, doc('kept')), 'first, then second', 'both acknowledged writes are back');
});

t.test('concurrent first loads of one key are counted from their start, so they cannot all pass its share', async (t) => {
  const { registry } = open(t, { maxLoadedDocumentsPerKey: 2 });
  // Two requests hold their documents (their use has not returned) while a third asks.
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const busy = ['h1', 'h2'].map((id) => registry.use(doc(id), () => held));
  await t.rejects(write(registry, doc('third'), 'x'), { name: 'AppError', status: 'RESOURCE_EXHAUSTED' }, 'both held by requests: nothing of the key can go');
  release();
  await Promise.all(busy);
  await write(registry, doc('third'), 'now it fits');
  t.equal(registry.loadedCount, 2, 'one of the released documents made room');
});

t.test('in a cluster, a refused load gives back the document lease it claimed', async (t) => {
  // Ownership as a cluster's leases hold it: claimed at load, given up at release.
  const { ownership, held } = leaseHoldingOwnership();
  const { registry } = open(t, { maxLoadedDocumentsPerKey: 1 }, ownership);
  const connected = await registry.acquire(doc('live'));
  t.teardown(() => connected.release());
  await t.rejects(write(registry, doc('refused'), 'x'), { name: 'AppError', status: 'RESOURCE_EXHAUSTED' });
  t.notOk(held.has(documentKeyString(doc('refused'))), 'the lease claimed for the refused load was released');
  t.ok(held.has(documentKeyString(doc('live'))), 'the loaded document keeps its own');
});
