// Tests a client's update on the actor's fast path (EditorDoc.applyClientUpdate): logged and published as sent, no-ops dropped, pending kept.
import t from 'tap';
import type { Test } from 'tap';
import * as Y from 'yjs';
import type { DocumentActor } from '../../src/doc/actor.js';
import { loadConfig } from '../../src/config.js';
import { backpressureCheckBytes } from '../../src/doc/fanout.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { readClientMessage, writeSyncStep2, writeUpdate } from '../../src/sync/protocol.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';
import { appendedTexts } from '../helpers/yjs.js';

const key = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };

async function open(t: Test, dir: string): Promise<{ actor: DocumentActor; registry: DocumentActors; hub: FakeHub }> {
  const hub = new FakeHub();
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 0 }), store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  const lease = await registry.acquire(key);
  t.teardown(() => lease.release());
  return { actor: lease.actor, registry, hub };
}

async function join(actor: DocumentActor, ...peers: FakePeer[]): Promise<void> {
  for (const peer of peers) actor.attach(peer);
  await actor.run(() => undefined);
  for (const peer of peers) peer.frames.length = 0;
}

const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Everything logged for the document's main store, as the next load would read it. */
async function logged(registry: DocumentActors): Promise<Uint8Array[]> {
  await registry.updateLog.flush();
  const [record] = registry.updateLog.snapshots.load(key.apiKey, key.organizationId, key.documentId);
  return record === undefined ? [] : [...(record.snapshot === undefined ? [] : [record.snapshot]), ...record.updates];
}

function textOf(updates: readonly Uint8Array[]): string {
  const doc = new Y.Doc();
  for (const update of updates) Y.applyUpdate(doc, update);
  return doc.getText('content').toString();
}


const updateOf = (frame: Uint8Array): Uint8Array => {
  const message = readClientMessage(frame);
  if (message.kind !== 'update' && message.kind !== 'sync-step2') throw new Error(`not an update frame: ${message.kind}`);
  return message.update;
};

t.test("a lone update goes out as the very frame the client sent, and its bytes are what is logged", async (t) => {
  const { actor, registry, hub } = await open(t, t.testdir());
  const [writer, reader] = ['w', 'r'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  await join(actor, writer, reader);
  const [update] = appendedTexts(new Y.Doc(), 'hello') as [Uint8Array];
  const frame = writeUpdate(update);
  actor.receive(writer, readClientMessage(frame));
  await endOfTurn();
  t.equal(reader.frames.length, 1);
  t.equal(reader.frames[0], frame, 'the same bytes object: not decoded and encoded again');
  t.same(writer.frames, [], 'not back to the sender');
  const log = await logged(registry);
  t.same(log, [update], 'the client update, as sent');
  const [record] = await actor.records();
  t.equal(record?.data, 'hello');
});

t.test('two updates of one sender in one turn are merged into one new frame', async (t) => {
  const { actor, hub } = await open(t, t.testdir());
  const [writer, reader] = ['w', 'r'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  await join(actor, writer, reader);
  const frames = appendedTexts(new Y.Doc(), 'a', 'b').map(writeUpdate);
  for (const frame of frames) actor.receive(writer, readClientMessage(frame));
  await endOfTurn();
  t.equal(reader.frames.length, 1, 'one frame');
  t.notOk(frames.includes(reader.frames[0] as Uint8Array), 'a merged frame, not either of the sent ones');
  t.equal(textOf(reader.frames.map(updateOf)), 'ab');
});

t.test('an update that changes nothing is neither logged nor passed on, nor stamps the store', async (t) => {
  const { actor, registry, hub } = await open(t, t.testdir());
  const [writer, reader] = ['w', 'r'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  await join(actor, writer, reader);
  const frame = writeUpdate(appendedTexts(new Y.Doc(), 'once')[0] as Uint8Array);
  actor.receive(writer, readClientMessage(frame));
  await endOfTurn();
  const before = await logged(registry);
  const [stamped] = await actor.records();
  reader.frames.length = 0;
  actor.receive(writer, readClientMessage(frame.slice()));
  await endOfTurn();
  t.same(reader.frames, [], 'nothing published');
  t.equal((await logged(registry)).length, before.length, 'nothing logged');
  t.equal((await actor.records())[0]?.lastUpdate, stamped?.lastUpdate);
});

t.test('an update waiting for one it depends on is logged and passed on; all converge when the missing one comes', async (t) => {
  const dir = t.testdir();
  const { actor, registry, hub } = await open(t, dir);
  const [writer, reader] = ['w', 'r'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  await join(actor, writer, reader);
  const [first, second] = appendedTexts(new Y.Doc(), 'a', 'b') as [Uint8Array, Uint8Array];
  actor.receive(writer, readClientMessage(writeUpdate(second)));
  await endOfTurn();
  t.equal(reader.frames.length, 1, 'the out-of-order update is passed on (the reader holds it pending too)');
  t.same(await logged(registry), [second], 'and logged, though not integrated yet');
  t.equal((await actor.records())[0]?.data, '', 'the server holds it pending');
  actor.receive(writer, readClientMessage(writeUpdate(first)));
  await endOfTurn();
  t.equal(textOf(reader.frames.map(updateOf)), 'ab', 'the reader converges');
  t.equal((await actor.records())[0]?.data, 'ab');
  t.equal(textOf(await logged(registry)), 'ab', 'and so does what the next load reads');
});

t.test("a SyncStep2 passes on only what was new to the server, not the client's whole state", async (t) => {
  const { actor, registry, hub } = await open(t, t.testdir());
  const [writer, joiner, reader] = ['w', 'j', 'r'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer, FakePeer];
  await join(actor, writer, joiner, reader);
  const shared = new Y.Doc();
  const [known] = appendedTexts(shared, 'x'.repeat(2000)) as [Uint8Array];
  actor.receive(writer, readClientMessage(writeUpdate(known)));
  await endOfTurn();
  reader.frames.length = 0;
  appendedTexts(shared, 'new');
  const whole = Y.encodeStateAsUpdate(shared);
  actor.receive(joiner, readClientMessage(writeSyncStep2(whole)));
  await endOfTurn();
  t.equal(reader.frames.length, 1);
  const passed = updateOf(reader.frames[0] as Uint8Array);
  t.ok(passed.length < 200, `only the new part goes out (${passed.length} bytes of ${whole.length})`);
  const log = await logged(registry);
  t.ok((log.at(-1)?.length ?? Infinity) < 200, 'and only it is logged');
  t.equal(textOf(log), `${'x'.repeat(2000)}new`);
});

t.test("a viewer's update is refused once and applied nowhere", async (t) => {
  const { actor, registry, hub } = await open(t, t.testdir());
  const [viewer, reader] = ['v', 'r'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  viewer.readOnly = true;
  await join(actor, viewer, reader);
  for (const text of ['no', 'nope']) actor.receive(viewer, readClientMessage(writeUpdate(appendedTexts(new Y.Doc(), text)[0] as Uint8Array)));
  await endOfTurn();
  t.equal(viewer.frames.length, 1, 'told once');
  t.equal(readClientMessage(viewer.frames[0] as Uint8Array).kind, 'auth');
  t.same(reader.frames, []);
  t.same(await logged(registry), []);
});

t.test('socket buffers are checked once a quarter of the backpressure limit (at most 64 KiB) has been published, not at every update', async (t) => {
  t.equal(backpressureCheckBytes(8 * 1024 * 1024), 64 * 1024);
  t.equal(backpressureCheckBytes(64 * 1024), 16 * 1024);
  const dir = t.testdir();
  const hub = new FakeHub();
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 0, wsMaxBackpressureBytes: 64 * 1024 }), store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  const lease = await registry.acquire(key);
  t.teardown(() => lease.release());
  let checks = 0;
  class CountingPeer extends FakePeer {
    override checkBackpressure(): void {
      checks++;
    }
  }
  const [writer, reader] = ['w', 'r'].map((id) => new CountingPeer(id, 'u1', 'main', hub)) as [CountingPeer, CountingPeer];
  await join(lease.actor, writer, reader);
  const source = new Y.Doc();
  let published = 0;
  while (published + 1100 < 16 * 1024) {
    const frame = writeUpdate(appendedTexts(source, 'y'.repeat(1000))[0] as Uint8Array);
    published += frame.length;
    lease.actor.receive(writer, readClientMessage(frame));
    await endOfTurn();
  }
  t.equal(checks, 0, `no check after ${published} bytes`);
  for (let i = 0; i < 3; i++) {
    lease.actor.receive(writer, readClientMessage(writeUpdate(appendedTexts(source, 'y'.repeat(1000))[0] as Uint8Array)));
    await endOfTurn();
  }
  t.equal(checks, 2, 'every connection checked once the interval is crossed');
  t.equal(reader.frames.length > 15, true, 'while every update went out');
});
