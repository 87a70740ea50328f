// Tests MAX_DOCUMENT_BYTES on the actor with real LMDB: a sync edit or a REST write that would pass it is not applied.
import t from 'tap';
import * as Y from 'yjs';
import type { Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { CLOSE } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import { Store } from '../../src/store/env.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';

const hub = new FakeHub();
const key = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };

function open(t: Test, maxDocumentBytes: number): DocumentActors {
  const dir = t.testdir();
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 0, maxDocumentBytes }), store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  return registry;
}

/** An update appending `text` to what `doc` holds, as a client's editor would send it. */
function append(doc: Y.Doc, text: string): Uint8Array {
  const before = Y.encodeStateVector(doc);
  doc.getText('content').insert(doc.getText('content').length, text);
  return Y.encodeStateAsUpdate(doc, before);
}

t.test('a sync edit that would take the document past MAX_DOCUMENT_BYTES is not applied and closes its connection with 4413', async (t) => {
  const registry = open(t, 4096);
  const lease = await registry.acquire(key);
  t.teardown(() => lease.release());
  const client = new Y.Doc();
  const peer = new FakePeer('s1', 'u1', 'main', hub);
  lease.actor.attach(peer, { type: 'text' });
  t.ok(lease.actor.receive(peer, { kind: 'update', update: append(client, 'a'.repeat(1000)) }));
  await lease.actor.whenIdle();
  t.equal(peer.closedWith, undefined, 'within the limit');
  const refusedBefore = limitRefusals.document_bytes;
  t.ok(lease.actor.receive(peer, { kind: 'update', update: append(client, 'b'.repeat(4000)) }));
  await lease.actor.whenIdle();
  t.equal(peer.closedWith, CLOSE.DOCUMENT_TOO_LARGE, 'closed with 4413');
  t.equal(limitRefusals.document_bytes, refusedBefore + 1, 'counted (plait_limit_refusals_total{limit="document_bytes"})');

  // A reconnecting client sends what the server lacks as its SyncStep2: refused the same way.
  const again = new FakePeer('s2', 'u1', 'main', hub);
  lease.actor.attach(again);
  t.ok(lease.actor.receive(again, { kind: 'sync-step2', update: Y.encodeStateAsUpdate(client) }));
  await lease.actor.whenIdle();
  t.equal(again.closedWith, CLOSE.DOCUMENT_TOO_LARGE, 'the SyncStep2 holding the edit is refused too');
  const [record] = await lease.actor.records('main');
  t.equal(record?.data, 'a'.repeat(1000), 'only the edit within the limit is in the document');
  t.ok(lease.actor.storedBytes <= 4096, 'and its stored bytes stay within the limit');
});

t.test('a REST write past MAX_DOCUMENT_BYTES is refused with FAILED_PRECONDITION naming the limit, and writes nothing', async (t) => {
  const registry = open(t, 4096);
  await registry.use(key, (actor) => actor.add('main', { type: 'text', data: 'small' }));
  const bytes = await registry.use(key, (actor) => actor.storedBytes);
  await t.rejects(registry.use(key, (actor) => actor.update('main', { type: 'text', data: 'x'.repeat(5000) })), {
    name: 'AppError',
    status: 'FAILED_PRECONDITION',
    message: /MAX_DOCUMENT_BYTES/,
  });
  t.equal(await registry.use(key, (actor) => actor.storedBytes), bytes, 'nothing was logged');
  t.same((await registry.use(key, (actor) => actor.records('main'))).map((record) => record.data), ['small']);
  await registry.use(key, (actor) => actor.update('main', { type: 'text', data: 'small, and a little more' }));
  t.same((await registry.use(key, (actor) => actor.records('main'))).map((record) => record.data), ['small, and a little more'], 'a write within the limit goes on');
});

t.test('0 turns the limit off', async (t) => {
  const registry = open(t, 0);
  await registry.use(key, (actor) => actor.add('main', { type: 'text', data: 'y'.repeat(100_000) }));
  t.equal((await registry.use(key, (actor) => actor.records('main')))[0]?.data, 'y'.repeat(100_000));
});
