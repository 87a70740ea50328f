// Tests DeferredLease (src/ws/deferred-lease.ts) over a real document actor: what a socket does before its lease arrives is replayed in order, failures close it, a closed socket gives the lease back.
import t from 'tap';
import type { Test } from 'tap';
import * as Y from 'yjs';
import { loadConfig } from '../../src/config.js';
import type { DocumentActor } from '../../src/doc/actor.js';
import { DocumentActors } from '../../src/doc/registry.js';
import type { ConnectionLease } from '../../src/doc/relay-port.js';
import { CLOSE, unavailable } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { readClientMessage, writeUpdate } from '../../src/sync/protocol.js';
import { DEFERRED_FRAMES_MAX, DeferredLease } from '../../src/ws/deferred-lease.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';
import { appendedText } from '../helpers/yjs.js';

const key = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };
const silent = createLogger('silent');

function registryOf(t: Test): DocumentActors {
  const dir = t.testdir();
  const store = Store.open(dir);
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 0 }), store, silent, new FakeHub());
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  return registry;
}

/** A lease promise the test settles. */
function pending(): { promise: Promise<ConnectionLease>; arrive(lease: ConnectionLease): void; fail(error: unknown): void } {
  let arrive: (lease: ConnectionLease) => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const promise = new Promise<ConnectionLease>((resolve, reject) => {
    arrive = resolve;
    fail = reject;
  });
  return { promise, arrive, fail };
}

/** An update frame appending `text` to `doc`'s text, as a client sends it. */
function editFrame(doc: Y.Doc, text: string): { message: ReturnType<typeof readClientMessage>; bytes: Uint8Array } {
  const bytes = writeUpdate(appendedText(doc, text));
  return { message: readClientMessage(bytes), bytes };
}

const textOf = (actor: DocumentActor, peer: FakePeer): Promise<string | undefined> => actor.run(() => actor.attachedStore(peer)?.doc.getText('content').toString());

/** Settles the lease and lets the deferred lease hand everything over (its then() runs in the microtasks). */
async function settle(lease: ReturnType<typeof pending>, real: ConnectionLease): Promise<void> {
  lease.arrive(real);
  await lease.promise;
  await Promise.resolve();
}

t.test("the socket's attach and the frames it sent before the lease arrived reach the document, in order", async (t) => {
  const registry = registryOf(t);
  const lease = pending();
  const deferred = new DeferredLease(lease.promise, silent);
  const peer = new FakePeer('s1');
  deferred.actor.attach(peer);
  const source = new Y.Doc();
  for (const text of ['one ', 'two ', 'three']) {
    const frame = editFrame(source, text);
    t.ok(deferred.actor.receive(peer, frame.message, frame.bytes), `"${text}" is kept while the lease is on its way`);
  }
  t.equal(deferred.actor.connectionCount, 0, 'no connection counts against the document yet');
  t.equal(peer.frames.length, 0, 'nothing was sent to the socket yet');

  const real = await registry.acquire(key);
  await settle(lease, real);
  t.equal(await textOf(real.actor, peer), 'one two three', 'the frames were applied in the order they came');
  t.ok(peer.frames.length > 0, 'the actor answered the attach (SyncStep1 and the join state)');
  t.equal(deferred.actor.connectionCount, 1, 'the connection counts once the lease arrived');

  const after = editFrame(source, '!');
  t.ok(deferred.actor.receive(peer, after.message, after.bytes), 'later frames go straight to the document');
  t.equal(await textOf(real.actor, peer), 'one two three!');
  deferred.actor.detach(peer);
  deferred.release();
  await real.actor.run(() => undefined);
  t.ok(real.actor.idle, 'detach and release reached the actor: nothing holds it');
});

t.test('a lease that fails closes the socket: 1012 to retry when unavailable, 1011 for a fault, before or after its open', async (t) => {
  const opened = pending();
  const afterOpen = new DeferredLease(opened.promise, silent);
  const early = new FakePeer('s1');
  afterOpen.actor.attach(early);
  opened.fail(unavailable('the node is stopping'));
  await opened.promise.catch(() => undefined);
  await Promise.resolve();
  t.equal(early.closedWith, CLOSE.SERVICE_RESTART, 'an open socket is closed with 1012');
  const frame = editFrame(new Y.Doc(), 'x');
  t.ok(afterOpen.actor.receive(early, frame.message, frame.bytes), 'frames still arriving from the closing socket are not a second failure');

  const notYet = pending();
  const beforeOpen = new DeferredLease(notYet.promise, silent);
  notYet.fail(new Error('LMDB said no'));
  await notYet.promise.catch(() => undefined);
  await Promise.resolve();
  const late = new FakePeer('s2');
  beforeOpen.actor.attach(late);
  t.equal(late.closedWith, CLOSE.INTERNAL, 'a socket that opens after the failure is closed at its open, with 1011');
});

t.test('a socket that closed before its lease arrived gives the lease back at once', async (t) => {
  const registry = registryOf(t);
  const lease = pending();
  const deferred = new DeferredLease(lease.promise, silent);
  const peer = new FakePeer('s1');
  deferred.actor.attach(peer);
  deferred.actor.detach(peer);
  deferred.release();
  const real = await registry.acquire(key);
  await settle(lease, real);
  await real.actor.run(() => undefined);
  t.ok(real.actor.idle, 'the late lease was released and the actor has no connection');
  t.equal(peer.frames.length, 0, 'the closed socket was never attached');
});

t.test(`past ${DEFERRED_FRAMES_MAX} waiting frames the connection is shed`, async (t) => {
  const lease = pending();
  const deferred = new DeferredLease(lease.promise, silent);
  const peer = new FakePeer('s1');
  deferred.actor.attach(peer);
  const source = new Y.Doc();
  let kept = 0;
  for (let i = 0; i < DEFERRED_FRAMES_MAX; i++) {
    const frame = editFrame(source, 'a');
    if (deferred.actor.receive(peer, frame.message, frame.bytes)) kept++;
  }
  t.equal(kept, DEFERRED_FRAMES_MAX, 'up to the limit every frame is kept');
  const over = editFrame(source, 'b');
  t.notOk(deferred.actor.receive(peer, over.message, over.bytes), 'the next one answers false, which closes the socket with 1013 at the edge');
});
