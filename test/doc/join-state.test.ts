// Tests the late-join frame: whole-state answers kept while a store is unchanged, dropped at a change, bounded by the budget.
import t from 'tap';
import * as Y from 'yjs';
import * as decoding from 'lib0/decoding';
import { loadConfig } from '../../src/config.js';
import { EditorDoc } from '../../src/doc/editor-doc.js';
import { coversNothing, JOIN_FRAME_MIN_BYTES, JOIN_TAIL_MAX_UPDATES, JoinFrames, keepsTail, type JoinFrameHolder } from '../../src/doc/join-state.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { writeSyncStep2 } from '../../src/sync/protocol.js';
import { appendRun, concatRuns } from '../../src/sync/update-concat.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';

const KEY = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };
const EMPTY_SV = Y.encodeStateVector(new Y.Doc());

/**
 * Applies an answer (Update frames, then a SyncStep2 frame last) to a fresh doc or `base`, as a joining client does,
 * and returns the text it holds once the SyncStep2 is applied: the moment a provider counts itself synced. Nothing
 * may be left pending then.
 */
function textOf(frames: readonly Uint8Array[], base?: Y.Doc): string {
  const doc = base ?? new Y.Doc();
  frames.forEach((frame, i) => {
    const decoder = decoding.createDecoder(frame);
    const type = decoding.readVarUint(decoder);
    const step = decoding.readVarUint(decoder);
    if (type !== 0 || step !== (i === frames.length - 1 ? 1 : 2)) throw new Error(`frame ${i} of ${frames.length} is sync ${type}/${step}`);
    Y.applyUpdate(doc, decoding.readVarUint8Array(decoder));
  });
  if (doc.store.pendingStructs !== null || doc.store.pendingDs !== null) throw new Error('the joiner is left with pending changes');
  return doc.getText('content').toString();
}

/** A store holding `chars` characters typed by one client (large enough to keep a frame when chars ≥ 64 Ki). */
function storeWith(chars: number, frames: JoinFrames, editorId = 'main'): EditorDoc {
  const store = new EditorDoc(KEY, editorId, undefined, frames);
  store.doc.getText('content').insert(0, 'x'.repeat(chars));
  return store;
}

t.test('a new client gets the whole state; the frame is kept, later changes follow it, a long tail re-encodes', async (t) => {
  const frames = new JoinFrames(8 * JOIN_FRAME_MIN_BYTES);
  const store = storeWith(JOIN_FRAME_MIN_BYTES, frames);
  const first = store.syncAnswer(EMPTY_SV);
  t.equal(first.length, 1, 'one SyncStep2 frame');
  t.equal(textOf(first).length, JOIN_FRAME_MIN_BYTES, 'the joiner has the whole text');
  const state = first[0];
  t.equal(frames.count, 1);
  t.equal(frames.bytes, state?.length);
  t.equal(store.syncAnswer(EMPTY_SV)[0], state, 'the second joiner gets the same frame, not a new encoding');

  const text = store.doc.getText('content');
  text.insert(0, 'new');
  text.delete(3, 2);
  const after = store.syncAnswer(EMPTY_SV);
  t.equal(after.length, 3, 'one Update frame per change, then the kept state');
  t.equal(after[2], state, 'the state goes last: a provider is synced at the SyncStep2, when it has every change');
  t.equal(textOf(after), text.toString(), 'the joiner ends with the current text');
  t.ok(frames.bytes > (state?.length ?? 0), 'the tail counts in the budget');

  for (let i = 0; i < JOIN_TAIL_MAX_UPDATES; i++) text.insert(i, 'z');
  t.equal(frames.count, 0, `past ${JOIN_TAIL_MAX_UPDATES} changes the answer is dropped`);
  t.equal(frames.bytes, 0);
  const again = store.syncAnswer(EMPTY_SV);
  t.equal(again.length, 1, 'and encoded again for the next joiner');
  t.not(again[0], state);
  t.equal(textOf(again), text.toString());
});

t.test('a tail larger than a quarter of the state drops the kept answer', async (t) => {
  const frames = new JoinFrames(8 * JOIN_FRAME_MIN_BYTES);
  const store = storeWith(JOIN_FRAME_MIN_BYTES, frames);
  store.syncAnswer(EMPTY_SV);
  store.doc.getText('content').insert(0, 'q'.repeat(JOIN_FRAME_MIN_BYTES / 8));
  t.equal(frames.count, 1, 'an eighth of the state is kept as a tail');
  store.doc.getText('content').insert(0, 'r'.repeat(JOIN_FRAME_MIN_BYTES / 8));
  t.equal(frames.count, 0, 'past a quarter it is not');
  t.ok(keepsTail(1000, 2, 250));
  t.notOk(keepsTail(1000, 2, 251));
  t.notOk(keepsTail(1000, JOIN_TAIL_MAX_UPDATES + 1, 10));
});

t.test('a client holding part of the doc gets only what it lacks; one holding none of it gets the kept frame', async (t) => {
  const frames = new JoinFrames(8 * JOIN_FRAME_MIN_BYTES);
  const store = storeWith(JOIN_FRAME_MIN_BYTES, frames);
  const whole = store.syncAnswer(EMPTY_SV);

  const client = new Y.Doc();
  textOf(whole, client);
  store.doc.getText('content').insert(0, 'tail');
  const diff = store.syncAnswer(Y.encodeStateVector(client));
  t.equal(diff.length, 1);
  t.ok((diff[0]?.length ?? 0) < 100, `a reconnecting client gets a small diff (${diff[0]?.length} bytes)`);
  t.equal(textOf(diff, client).slice(0, 5), 'tailx', 'and it completes its state');

  const stranger = new Y.Doc();
  stranger.getText('other').insert(0, 'offline edit');
  t.ok(coversNothing(store.doc, Y.encodeStateVector(stranger)), 'a state vector of other clients only covers nothing of the doc');
  t.notOk(coversNothing(store.doc, Y.encodeStateVector(client)));
  const full = store.syncAnswer(Y.encodeStateVector(stranger));
  t.equal(store.syncAnswer(EMPTY_SV)[0], full[0], 'such a client and a new one get the same kept frame');
  t.equal(textOf(full).length, JOIN_FRAME_MIN_BYTES + 4);
});

t.test('small documents, a zero budget and a frame larger than the budget keep nothing', async (t) => {
  const roomy = new JoinFrames(8 * JOIN_FRAME_MIN_BYTES);
  const small = storeWith(100, roomy);
  t.equal(textOf(small.syncAnswer(EMPTY_SV)).length, 100);
  t.equal(roomy.count, 0, 'below JOIN_FRAME_MIN_BYTES the state is encoded for each joiner');

  const off = new JoinFrames(0);
  const big = storeWith(JOIN_FRAME_MIN_BYTES, off);
  t.not(big.syncAnswer(EMPTY_SV)[0], big.syncAnswer(EMPTY_SV)[0], 'budget 0: a new encoding each time');
  t.equal(off.count, 0);

  const tight = new JoinFrames(JOIN_FRAME_MIN_BYTES);
  const bigger = storeWith(2 * JOIN_FRAME_MIN_BYTES, tight);
  t.equal(textOf(bigger.syncAnswer(EMPTY_SV)).length, 2 * JOIN_FRAME_MIN_BYTES);
  t.equal(tight.count, 0, 'a frame larger than the whole budget is not kept');
});

t.test('the budget drops the least recently used frames; destroying a doc gives its bytes back', async (t) => {
  const frames = new JoinFrames(3 * JOIN_FRAME_MIN_BYTES);
  const [a, b, c] = ['a', 'b', 'c'].map((id) => storeWith(JOIN_FRAME_MIN_BYTES, frames, id)) as [EditorDoc, EditorDoc, EditorDoc];
  const frameA = a.syncAnswer(EMPTY_SV);
  b.syncAnswer(EMPTY_SV);
  t.equal(frames.count, 2);
  t.equal(a.syncAnswer(EMPTY_SV)[0], frameA[0], 'a is used again: now the most recent');
  c.syncAnswer(EMPTY_SV);
  t.equal(frames.count, 2, 'a third frame does not fit: one is dropped');
  t.ok(frames.bytes <= frames.budgetBytes);
  t.equal(a.syncAnswer(EMPTY_SV)[0], frameA[0], 'the most recently used one (a) stayed');
  t.equal(frames.count, 2);

  a.doc.destroy();
  t.equal(frames.count, 1, 'a destroyed doc (unload) leaves the budget');
  c.doc.destroy();
  b.doc.destroy();
  t.equal(frames.bytes, 0);
});

t.test('the budget evicts in use order and keeps its count exact', async (t) => {
  const evicted: string[] = [];
  const holder = (name: string): JoinFrameHolder => ({ evictJoinFrame: () => evicted.push(name) });
  const [x, y, z] = [holder('x'), holder('y'), holder('z')];
  const frames = new JoinFrames(300_000);
  frames.add(x, 100_000);
  frames.add(y, 100_000);
  frames.touch(x);
  frames.add(z, 150_000);
  t.same(evicted, ['y'], 'y was the least recently used');
  t.equal(frames.bytes, 250_000);
  frames.add(z, 120_000);
  t.equal(frames.bytes, 220_000, 'a holder re-added counts once, at its new size');
  frames.remove(x);
  frames.remove(x);
  t.equal(frames.bytes, 120_000, 'removing twice counts once');
  t.notOk(frames.admits(JOIN_FRAME_MIN_BYTES - 1));
  t.notOk(frames.admits(300_001));
  t.ok(frames.admits(300_000));
});

t.test('through the actor: joiners of a loaded document get its state, then its changes', async (t) => {
  const dir = t.testdir();
  const store = Store.open(dir);
  const config = loadConfig({}, [], { dataDir: dir, groupCommitMs: 0 });
  t.equal(config.joinStateCacheBytes, 32 * 1024 * 1024, 'the default budget');
  const hub = new FakeHub();
  const registry = new DocumentActors(config, store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  const lease = await registry.acquire(KEY);
  const writer = new FakePeer('w', 'u1', 'main', hub);
  lease.actor.attach(writer, { type: 'text' });
  const source = new Y.Doc();
  source.getText('content').insert(0, 'y'.repeat(JOIN_FRAME_MIN_BYTES));
  t.ok(lease.actor.receive(writer, { kind: 'update', update: Y.encodeStateAsUpdate(source) }));

  const join = async (id: string): Promise<string> => {
    const peer = new FakePeer(id, 'u1', 'main', hub);
    lease.actor.attach(peer);
    t.ok(lease.actor.receive(peer, { kind: 'sync-step1', stateVector: EMPTY_SV }));
    await lease.actor.run(() => undefined);
    lease.actor.detach(peer);
    // The answer: every sync frame but the server's own SyncStep1 (0/0), sent at the attach.
    return textOf(peer.frames.filter((frame) => frame[0] === 0 && frame[1] !== 0));
  };
  t.equal((await join('j1')).length, JOIN_FRAME_MIN_BYTES);
  t.equal(registry.joinFrames.count, 1, 'the frame is kept after the first join');
  t.ok(registry.stats().joinStateBytes > JOIN_FRAME_MIN_BYTES, 'its bytes are reported to the metrics scrape');
  t.equal((await join('j2')).length, JOIN_FRAME_MIN_BYTES);
  source.getText('content').insert(0, 'edit');
  t.ok(lease.actor.receive(writer, { kind: 'update', update: Y.encodeStateAsUpdate(source) }));
  t.equal((await join('j3')).slice(0, 5), 'edity', 'a joiner after an edit has the edit');
  lease.actor.detach(writer);
  lease.release();
});

t.test('a store opened from disk answers its first joiner from the snapshot and the merged log tail', async (t) => {
  const source = new Y.Doc();
  const text = source.getText('content');
  text.insert(0, 's'.repeat(JOIN_FRAME_MIN_BYTES));
  const snapshot = Y.encodeStateAsUpdate(source);
  const updates: Uint8Array[] = [];
  source.on('update', (update: Uint8Array) => updates.push(update));
  for (let i = 0; i < 200; i++) text.insert((i * 7919) % text.length, `${i % 10}`);
  text.delete(5, 20);
  const meta = { type: 'text' as const, contentKey: 'content', lastUpdate: 1, lastUpdatedBy: 'u1', sessionId: null, foldedSeq: 0 };
  const loaded = { editorId: 'main', meta, snapshot, updates, nextSeq: updates.length, logBytes: 0 };

  const frames = new JoinFrames(8 * JOIN_FRAME_MIN_BYTES);
  const store = new EditorDoc(KEY, 'main', loaded, frames);
  t.equal(store.doc.getText('content').toString(), text.toString(), 'the merged tail gives the same doc as the entries one by one');
  t.equal(frames.count, 1, 'the answer is kept from the load');
  const answer = store.syncAnswer(EMPTY_SV);
  t.equal(answer.length, 2, 'the merged tail as one Update, then the snapshot as SyncStep2');
  t.equal(textOf(answer), text.toString(), 'a joiner ends with the whole state');
  t.equal(store.logCount, updates.length, 'the log position is unchanged by the merge');

  const off = new EditorDoc(KEY, 'main', loaded, new JoinFrames(0));
  t.equal(off.doc.getText('content').toString(), text.toString());
  const bare = new EditorDoc(KEY, 'main', { ...loaded, updates: [] }, frames);
  t.equal(bare.syncAnswer(EMPTY_SV).length, 1, 'no tail: the snapshot alone');
  t.equal(textOf(bare.syncAnswer(EMPTY_SV)).length, JOIN_FRAME_MIN_BYTES);
});

t.test('a small store opened from disk answers its first new joiner with its snapshot and tail joined by their bytes, once', async (t) => {
  // A 1 KB document written by one client, then a tail of 200 inserts and a delete by another (a later session).
  const first = new Y.Doc();
  first.getText('content').insert(0, 'f'.repeat(1024));
  const snapshot = Y.encodeStateAsUpdate(first);
  const editor = new Y.Doc();
  Y.applyUpdate(editor, snapshot);
  const text = editor.getText('content');
  const updates: Uint8Array[] = [];
  editor.on('update', (update: Uint8Array) => updates.push(update));
  for (let i = 0; i < 200; i++) text.insert((i * 7919) % text.length, `${i % 10}`);
  text.delete(5, 20);
  const meta = { type: 'text' as const, contentKey: 'content', lastUpdate: 1, lastUpdatedBy: 'u1', sessionId: null, foldedSeq: 0 };
  const loaded = { editorId: 'main', meta, snapshot, updates, nextSeq: updates.length, logBytes: 0 };
  const [run] = concatRuns(updates) as [Uint8Array];
  const frames = new JoinFrames(8 * JOIN_FRAME_MIN_BYTES);

  const store = new EditorDoc(KEY, 'main', loaded, frames);
  const held = writeSyncStep2(appendRun(snapshot, run) as Uint8Array).length;
  t.equal(store.firstAnswerBytes, held, 'its bytes are held until a joiner takes it (the loaded-documents budget counts them)');
  const answer = store.syncAnswer(EMPTY_SV);
  t.equal(store.firstAnswerBytes, 0, 'and none after');
  t.same(answer, [writeSyncStep2(appendRun(snapshot, run) as Uint8Array)], 'the first answer is the snapshot and the tail joined, not a new encoding');
  t.equal(textOf(answer), text.toString(), 'a joiner ends with the whole state');
  t.equal(frames.count, 0, 'a small store keeps nothing in the budget');
  const second = store.syncAnswer(EMPTY_SV);
  t.same(second, [writeSyncStep2(Y.encodeStateAsUpdate(store.doc))], 'used once: the next joiner gets an encoding');
  t.equal(textOf(second), text.toString());

  const changed = new EditorDoc(KEY, 'main', loaded, frames);
  changed.doc.getText('content').insert(0, 'new ');
  t.equal(changed.firstAnswerBytes, 0, 'a change drops its bytes');
  t.equal(textOf(changed.syncAnswer(EMPTY_SV)), `new ${text.toString()}`, 'a change before the first joiner drops it: the answer has the change');

  const client = new EditorDoc(KEY, 'main', loaded, frames);
  const joiner = new Y.Doc();
  joiner.getText('content').insert(0, 'mine');
  const peerUpdate = Y.encodeStateAsUpdate(joiner);
  t.ok(client.applyClientUpdate(peerUpdate, new FakePeer('p1')));
  t.equal(textOf(client.syncAnswer(EMPTY_SV)).length, text.length + 4, "a client's update drops it too");

  const continued = new Y.Doc();
  Y.applyUpdate(continued, snapshot);
  continued.clientID = first.clientID;
  const own: Uint8Array[] = [];
  continued.on('update', (update: Uint8Array) => own.push(update));
  continued.getText('content').insert(3, 'own part');
  const same = new EditorDoc(KEY, 'main', { ...loaded, updates: own }, frames);
  t.equal(textOf(same.syncAnswer(EMPTY_SV)), continued.getText('content').toString(), "a tail of the snapshot's own client goes into its part");

  const off = new EditorDoc(KEY, 'main', loaded, new JoinFrames(0));
  t.same(off.syncAnswer(EMPTY_SV), [writeSyncStep2(Y.encodeStateAsUpdate(off.doc))], 'JOIN_STATE_CACHE_BYTES=0: every answer encoded');
});
