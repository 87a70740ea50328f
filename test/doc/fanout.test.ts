// Tests the actor's fan-out (src/doc/fanout.ts): per-turn merged frames, the sender left out, REST and live frames, awareness expiry.
import t from 'tap';
import type { Test } from 'tap';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { sweep } from '../../src/doc/awareness-sweep.js';
import type { DocumentActor } from '../../src/doc/actor.js';
import { loadConfig } from '../../src/config.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { readClientMessage, writeExtension } from '../../src/sync/protocol.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';
import { appendedText } from '../helpers/yjs.js';

const key = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };

async function actorOf(t: Test, hub: FakeHub): Promise<DocumentActor> {
  const dir = t.testdir();
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 0 }), store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  const lease = await registry.acquire(key);
  t.teardown(() => lease.release());
  return lease.actor;
}

/** Attaches peers on one hub and waits until their join frames went out; then forgets those frames. */
async function join(actor: DocumentActor, ...peers: FakePeer[]): Promise<void> {
  for (const peer of peers) actor.attach(peer);
  await actor.run(() => undefined);
  for (const peer of peers) peer.frames.length = 0;
}

/** The end of the current event-loop turn, when queued updates are published (an event, not a delay). */
const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const updatesIn = (peer: FakePeer): Uint8Array[] =>
  peer.frames.flatMap((frame) => {
    const message = readClientMessage(frame);
    return message.kind === 'update' ? [message.update] : [];
  });


t.test("one sender's updates of one turn reach the others as one merged frame, never the sender", async (t) => {
  const hub = new FakeHub();
  const actor = await actorOf(t, hub);
  const [writer, reader, viewer] = ['w', 'r', 'v'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer, FakePeer];
  viewer.readOnly = true;
  await join(actor, writer, reader, viewer);
  const source = new Y.Doc();
  for (const text of ['a', 'b', 'c']) actor.receive(writer, { kind: 'update', update: appendedText(source, text) });
  await actor.run(() => undefined);
  t.same(updatesIn(reader), [], 'nothing before the end of the turn');
  await endOfTurn();
  t.equal(updatesIn(reader).length, 1, 'one frame for three updates');
  t.equal(updatesIn(viewer).length, 1, 'viewers receive updates too');
  t.same(updatesIn(writer), [], 'the sender does not hear its own updates');
  const replica = new Y.Doc();
  for (const update of updatesIn(reader)) Y.applyUpdate(replica, update);
  t.equal(replica.getText('content').toString(), 'abc');
});

t.test('two senders in one turn: each hears the other, a third hears both, all converge', async (t) => {
  const hub = new FakeHub();
  const actor = await actorOf(t, hub);
  const [a, b, c] = ['a', 'b', 'c'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer, FakePeer];
  await join(actor, a, b, c);
  const docs = new Map([a, b, c].map((peer) => [peer, new Y.Doc()]));
  const docA = docs.get(a) as Y.Doc;
  const docB = docs.get(b) as Y.Doc;
  for (let i = 0; i < 5; i++) {
    actor.receive(a, { kind: 'update', update: appendedText(docA, `A${i}`) });
    actor.receive(b, { kind: 'update', update: appendedText(docB, `B${i}`) });
  }
  await actor.run(() => undefined);
  await endOfTurn();
  t.equal(updatesIn(a).length, 1, 'a hears one frame: b');
  t.equal(updatesIn(b).length, 1, 'b hears one frame: a');
  t.equal(updatesIn(c).length, 2, 'c hears one frame per sender');
  for (const [peer, doc] of docs) for (const update of updatesIn(peer)) Y.applyUpdate(doc, update);
  const [record] = await actor.records();
  const texts = [...docs.values()].map((doc) => doc.getText('content').toString());
  t.equal(new Set(texts).size, 1, `every replica is identical: ${texts.join(' | ')}`);
  t.equal(texts[0], record?.data, 'and equal to the server');
  t.equal(texts[0]?.length, 20);
});

t.test('a REST write reaches every connection; live frames reach only ext=1 connections', async (t) => {
  const hub = new FakeHub();
  const actor = await actorOf(t, hub);
  const [plain, ext] = ['p', 'e'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  ext.extensions = true;
  await join(actor, plain, ext);
  await actor.add('main', { type: 'text', data: 'from rest' });
  await endOfTurn();
  t.equal(updatesIn(plain).length, 1, 'the plain connection got the REST update');
  t.equal(updatesIn(ext).length, 1, 'the ext connection got it');
  plain.frames.length = 0;
  ext.frames.length = 0;
  const live = writeExtension(100, new TextEncoder().encode('"x"'));
  t.equal(await actor.run(() => actor.broadcast(live)), 1, 'queued for the one ext connection');
  t.same(plain.frames, [], 'not to the plain connection');
  t.same(ext.frames, [live]);
  const generic = Uint8Array.of(2, 1, 0);
  t.equal(await actor.run(() => actor.broadcast(generic)), 2, 'a core frame goes to both');
  t.same(plain.frames, [generic]);
});

t.test('awareness is echoed to everyone and a silent state expires in the shared sweep', async (t) => {
  const hub = new FakeHub();
  const actor = await actorOf(t, hub);
  const [a, b] = ['a', 'b'].map((id) => new FakePeer(id, 'u1', 'main', hub)) as [FakePeer, FakePeer];
  await join(actor, a, b);
  const client = new awarenessProtocol.Awareness(new Y.Doc());
  t.teardown(() => client.destroy());
  client.setLocalState({ cursor: 1 });
  const update = awarenessProtocol.encodeAwarenessUpdate(client, [client.clientID]);
  actor.receive(a, { kind: 'awareness', update, entries: [] });
  await actor.run(() => undefined);
  t.equal(a.frames.length, 1, 'the sender hears its own state');
  t.equal(b.frames.length, 1, 'the other connection hears it');
  b.frames.length = 0;
  sweep(Date.now() + awarenessProtocol.outdatedTimeout + 1);
  const removal = b.frames.map((frame) => readClientMessage(frame));
  t.equal(removal[0]?.kind, 'awareness', 'the expired state is removed for everyone');
  t.same(removal[0]?.kind === 'awareness' ? removal[0].entries.map((entry) => entry.state) : [], [null]);
});

t.test('a connection is in one topic (two with ext=1); awareness and broadcasts reach every connection of every store once', async (t) => {
  const hub = new FakeHub();
  const actor = await actorOf(t, hub);
  const [a, b, other] = [
    ['a', 'main'],
    ['b', 'main'],
    ['o', 'other'],
  ].map(([id, editorId]) => new FakePeer(id as string, 'u1', editorId, hub)) as [FakePeer, FakePeer, FakePeer];
  other.extensions = true;
  const subscribed = new Map<FakePeer, string[]>();
  for (const peer of [a, b, other]) {
    const subscribe = peer.subscribe.bind(peer);
    peer.subscribe = (topic: string): void => {
      subscribed.set(peer, [...(subscribed.get(peer) ?? []), topic]);
      subscribe(topic);
    };
  }
  await join(actor, a, b, other);
  t.equal(subscribed.get(a)?.length, 1, 'a plain connection is in one topic');
  t.equal(subscribed.get(other)?.length, 2, 'an ext=1 connection also in the live topic');
  t.same(subscribed.get(a), subscribed.get(b), 'connections of one store share its topic');
  t.not(subscribed.get(a)?.[0], subscribed.get(other)?.[0], 'each store has its own');

  const generic = Uint8Array.of(2, 1, 0);
  t.equal(await actor.run(() => actor.broadcast(generic)), 3);
  for (const peer of [a, b, other]) t.same(peer.frames, [generic], `${peer.sessionId} got the broadcast once`);
  for (const peer of [a, b, other]) peer.frames.length = 0;

  const client = new awarenessProtocol.Awareness(new Y.Doc());
  t.teardown(() => client.destroy());
  client.setLocalState({ cursor: 2 });
  actor.receive(other, { kind: 'awareness', update: awarenessProtocol.encodeAwarenessUpdate(client, [client.clientID]), entries: [] });
  await actor.run(() => undefined);
  for (const peer of [a, b, other]) t.equal(peer.frames.length, 1, `${peer.sessionId} heard the awareness change once`);

  // An update reaches only its own store's connections.
  a.frames.length = 0;
  other.frames.length = 0;
  actor.receive(a, { kind: 'update', update: appendedText(new Y.Doc(), 'x') });
  await endOfTurn();
  t.equal(updatesIn(b).length, 1, 'the same store hears it');
  t.same(updatesIn(other), [], 'another store does not');
});
