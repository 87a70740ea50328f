// Tests src/doc/annotations/state.ts: one outbox event per change, and a failed commit lands neither change nor event.
import t, { type Test } from 'tap';
import { AnnotationState } from '../../src/doc/annotations/state.js';
import { commentView, type AnnotationInput, type CommentRecord, type Status } from '../../src/doc/annotations/model.js';
import { Outbox } from '../../src/events/outbox.js';
import type { WriteTx } from '../../src/store/env.js';
import type { EventDraft, EventPayload } from '../../src/events/types.js';
import { isCommentPayload } from '../../src/doc/annotations/events.js';
import { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';

const ref = { apiKey: 'k1', organizationId: 'org', documentId: 'doc' };
const resolved: Status = { id: 'RESOLVED', name: 'Resolved', type: 'terminal', color: '#0f0', lightColor: '#efe', svg: '<svg/>' };
const inProgress: Status = { id: 'WIP', name: 'In progress', type: 'ongoing', color: '#00f', lightColor: '#eef', iconUrl: 'https://x.io/i.svg' };
const thread = (annotationId: string, extra: Partial<AnnotationInput> = {}): AnnotationInput => ({
  annotationId,
  commentData: [{ commentText: 'first', from: { userId: 'alice' } }],
  ...extra,
});

/** The annotation ids of the document's stored rows, in key order. */
const storedIds = (store: Store): string[] =>
  Array.from(store.records<{ annotationId: string }>(DB.annotations).getRange({ start: [ref.apiKey, ref.organizationId, ref.documentId], end: [ref.apiKey, ref.organizationId, ref.documentId, KEY_END] }), ({ value }) => value.annotationId);

function open(t: Test, outboxFor: (store: Store) => Outbox = (store) => new Outbox(store)) {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = outboxFor(store);
  let clock = 1_000;
  const state = AnnotationState.load({ store, outbox, now: () => ++clock }, ref);
  /** Runs `change` and returns the types of the outbox rows it wrote. */
  const eventsOf = async (change: () => Promise<unknown>): Promise<string[]> => {
    const before = outbox.lastSeq();
    await change();
    return outbox.read({ afterSeq: before }).map((e) => e.type);
  };
  return { store, outbox, state, eventsOf };
}

t.test('each change writes exactly one outbox event of its type', async (t) => {
  const { state, eventsOf, outbox } = open(t);
  t.same(await eventsOf(() => state.add([thread('a1'), thread('a2', { type: 'suggestion' })])), ['comment_annotation.add', 'comment_annotation.add'], 'one per thread');
  t.same(await eventsOf(() => state.addComments('a1', [{ commentText: 'reply', from: { userId: 'bob' } }])), ['comment.add']);
  t.same(await eventsOf(() => state.updateComments('a1', [2], { from: { userId: 'bob' }, commentText: 'edited' })), ['comment.update']);
  t.same(await eventsOf(() => state.deleteComments('a1', [2])), ['comment.delete']);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a1'] }, { status: resolved, statusUpdatedByUserId: 'bob' }, undefined)), [
    'comment_annotation.status_change',
  ]);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a1'] }, { assignedTo: { userId: 'carol' } }, undefined)), ['comment_annotation.assign']);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a1'] }, { priority: { id: 'P1', name: 'High', color: 'r', lightColor: 'p' } }, undefined)), [
    'comment_annotation.priority_change',
  ]);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a2'] }, { suggestion: { status: 'accepted' } }, undefined)), ['comment_annotation.suggestion_accept']);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a2'] }, { suggestion: { status: 'rejected' } }, undefined)), ['comment_annotation.suggestion_reject']);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a1'] }, { context: { page: 'home' } }, undefined)), ['comment_annotation.update']);
  t.same(await eventsOf(() => state.remove({ annotationIds: ['a2'] })), ['comment_annotation.delete']);
  t.same(await eventsOf(() => state.update({ annotationIds: ['a1'] }, { status: resolved }, undefined)), [], 'an update that changes nothing raises nothing');

  const statusEvent = outbox.read().find((e) => e.type === 'comment_annotation.status_change');
  t.match(statusEvent, {
    actionType: 'statusChanged',
    source: 'comment',
    data: { oldStatus: { id: 'OPEN' }, newStatus: { id: 'RESOLVED' }, actionUser: { userId: 'bob' }, commentAnnotation: { annotationId: 'a1', resolvedByUserId: 'bob' } },
  });
  const commentEvent = outbox.read().find((e) => e.type === 'comment.add');
  t.match(commentEvent?.data, { targetComment: { commentId: 2, commentText: 'reply', status: 'added', type: 'text' }, actionUser: { userId: 'bob' } });
});

t.test("an event's targetComment is exactly the comment's own view (key order included), whether it is still in the thread or deleted", async (t) => {
  const { state, outbox } = open(t);
  const comment = (id: number): CommentRecord => {
    const found = state.find('a1')?.comments.find((c) => c.commentId === id);
    if (found === undefined) throw new Error(`comment ${id} not in a1`);
    return found;
  };
  /** The JSON of the targetComment of the last event written, against the JSON of the view of `record`. */
  const check = (record: CommentRecord, what: string): void => {
    const events = outbox.read();
    const data = events[events.length - 1]?.data as { targetComment?: unknown } | undefined;
    t.equal(JSON.stringify(data?.targetComment), JSON.stringify(commentView(record)), what);
  };
  await state.add([thread('a1', { commentData: [{ commentText: 'first', from: { userId: 'alice', name: 'A' }, context: { x: 1 }, attachments: [{ id: 'f' }] }] })]);
  check(comment(1), 'comment_annotation.add: the first comment');
  await state.addComments('a1', [{ commentText: 'reply', from: { userId: 'bob' } }, { commentHtml: '<b>two</b>', from: { userId: 'bob' } }]);
  check(comment(3), 'comment.add: the last comment added');
  await state.updateComments('a1', [2], { from: { userId: 'bob' }, commentText: 'edited' });
  check(comment(2), 'comment.update: the comment as edited');
  const deleted = comment(3);
  await state.deleteComments('a1', [3]);
  check(deleted, 'comment.delete: the comment as it was, no longer in the thread');
});

t.test('one update touching several aspects writes one event per aspect, all in its transaction', async (t) => {
  const { state, eventsOf } = open(t);
  await state.add([thread('a1')]);
  const types = await eventsOf(() =>
    state.update({ annotationIds: ['a1'] }, { status: inProgress, assignedTo: { userId: 'dan' }, location: { id: 'loc2' } }, undefined),
  );
  t.same(types, ['comment_annotation.status_change', 'comment_annotation.assign', 'comment_annotation.update']);
});

t.test('a non-terminal status clears resolvedByUserId', async (t) => {
  const { state } = open(t);
  await state.add([thread('a1')]);
  await state.update({ annotationIds: ['a1'] }, { status: resolved, resolvedByUserId: 'erin' }, undefined);
  t.equal(state.find('a1')?.resolvedByUserId, 'erin');
  await state.update({ annotationIds: ['a1'] }, { status: inProgress }, undefined);
  t.equal(state.find('a1')?.resolvedByUserId, undefined);
});

/** An outbox whose append writes its row and then fails: the commit of the whole change must fail with it. */
class FailingOutbox extends Outbox {
  failing = true;
  override append(tx: WriteTx, draft: EventDraft, now: number) {
    const event = super.append(tx, draft, now);
    if (this.failing) throw new Error('disk said no');
    return event;
  }
}

t.test('when the commit fails, neither the change nor its event lands, in LMDB or in memory', async (t) => {
  const failing: { outbox?: FailingOutbox } = {};
  const { store, state } = open(t, (s) => (failing.outbox = new FailingOutbox(s)));
  const outbox = failing.outbox as FailingOutbox;
  outbox.failing = false;
  await state.add([thread('a1')]);
  outbox.failing = true;
  await t.rejects(state.add([thread('a2')]), { message: 'disk said no' });
  t.same(storedIds(store), ['a1'], 'new thread not stored');
  t.equal(state.find('a2'), undefined, 'new thread not in memory');

  await t.rejects(state.addComments('a1', [{ commentText: 'lost', from: { userId: 'bob' } }]));
  await t.rejects(state.update({ annotationIds: ['a1'] }, { status: resolved }, undefined));
  await t.rejects(state.remove({ annotationIds: ['a1'] }));
  t.same(outbox.read().map((e) => e.type), ['comment_annotation.add'], 'only the event of the committed change exists');
  const reloaded = AnnotationState.load({ store, outbox, now: Date.now }, ref);
  t.same([...reloaded.all()], [...state.all()], 'what is stored equals what is in memory');
  t.equal(reloaded.find('a1')?.comments.length, 1);
  t.equal(reloaded.find('a1')?.status.id, 'OPEN');

  outbox.failing = false;
  await state.addComments('a1', [{ commentText: 'kept', from: { userId: 'bob' } }]);
  t.same(outbox.read().map((e) => [e.seq, e.type]), [
    [1, 'comment_annotation.add'],
    [2, 'comment.add'],
  ]);
});

/** An outbox whose second append fails after the first thread's row and event are written. */
class SecondAppendFails extends Outbox {
  private appends = 0;
  // Its rows can be refused, so a change that raises an event is not bounded (src/store/group-commit.ts).
  override raisesBounded(): boolean {
    return false;
  }
  override append(tx: WriteTx, draft: EventDraft, now: number) {
    const seq = super.append(tx, draft, now);
    if (++this.appends === 2) throw new Error('second append refused');
    return seq;
  }
}

t.test('a write that fails mid-batch leaves the earlier items of the batch unwritten too', async (t) => {
  const { store, state, outbox } = open(t, (s) => new SecondAppendFails(s));
  await t.rejects(state.add([thread('fine'), thread('second')]), { message: 'second append refused' });
  t.same(storedIds(store), [], 'the first thread was written before the failure, and taken back with it');
  t.equal(state.size, 0);
  t.same(outbox.read(), []);
});

const annotationIdOf = (data: EventPayload): string | undefined => (isCommentPayload(data) ? data.commentAnnotation.annotationId : undefined);

/** Fails the append of events about one thread only. */
class SelectiveOutbox extends Outbox {
  failFor: string | undefined;
  // Its rows can be refused, so a change that raises an event is not bounded: the refusal stays that change's own.
  override raisesBounded(): boolean {
    return false;
  }
  override append(tx: WriteTx, draft: EventDraft, now: number) {
    const event = super.append(tx, draft, now);
    if (annotationIdOf(draft.data) === this.failFor) throw new Error('disk said no');
    return event;
  }
}

t.test('changes made without waiting for commits: one that fails takes the later ones with it, and memory is as committed', async (t) => {
  const selective: { outbox?: SelectiveOutbox } = {};
  const { store, state } = open(t, (s) => (selective.outbox = new SelectiveOutbox(s)));
  const outbox = selective.outbox as SelectiveOutbox;
  outbox.failFor = 'a2';
  // The actor runs these back to back: each sees the ones before it in memory, none has committed yet.
  const results = await Promise.allSettled([
    state.add([thread('a1')]),
    state.add([thread('a2')]),
    state.addComments('a2', [{ commentText: 'reply to a thread that will not exist', from: { userId: 'bob' } }]),
    state.add([thread('a3')]),
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'rejected']);
  t.match(results[1], { reason: { message: 'disk said no' } });
  t.match(results[2], { reason: { status: 'ABORTED' } }, 'made on top of the failed change');
  t.match(results[3], { reason: { status: 'ABORTED' } }, 'later changes of the document fail too: memory they saw held a2');
  t.same([...state.all()].map((r) => r.annotationId), ['a1'], 'memory holds only what committed');
  const reloaded = AnnotationState.load({ store, outbox, now: Date.now }, ref);
  t.same([...reloaded.all()], [...state.all()], 'what is stored equals what is in memory');
  t.same(outbox.read().map((e) => [e.seq, e.type, annotationIdOf(e.data)]), [[1, 'comment_annotation.add', 'a1']]);
  outbox.failFor = undefined;
  await state.add([thread('a4')]);
  t.equal(state.find('a4')?.annotationNumber, 2, 'the annotation number taken by the failed adds is given back');
});

t.test('rows are keyed by annotation number; a schema-2 row under its id moves with its next change', async (t) => {
  const { store, state } = open(t);
  await state.add([thread('new-1'), thread('new-2')]);
  const db = store.records<{ annotationId: string; annotationNumber: number }>(DB.annotations);
  const prefix = [ref.apiKey, ref.organizationId, ref.documentId];
  const keys = (): unknown[] => Array.from(db.getKeys({ start: prefix, end: [...prefix, KEY_END] }), (key) => (key as unknown[])[3]);
  t.same(keys(), [1, 2], 'new threads are stored under their numbers');

  // Two rows as schema 2 wrote them (keyed by the annotation id), taken from fresh threads of another document.
  const other = AnnotationState.load({ store, outbox: new Outbox(store), now: () => 5_000 }, { ...ref, documentId: 'scratch' });
  await other.add([thread('old-a'), thread('old-b')]);
  for (const id of ['old-a', 'old-b']) {
    const record = other.find(id);
    if (record === undefined) throw new Error(`no ${id}`);
    await db.put([...prefix, id], { ...record, annotationNumber: record.annotationNumber + 10 });
  }
  const reloaded = AnnotationState.load({ store, outbox: new Outbox(store), now: () => 6_000 }, ref);
  t.same([...reloaded.all()].map((r) => r.annotationId).sort(), ['new-1', 'new-2', 'old-a', 'old-b'], 'both forms load');

  await reloaded.addComments('old-a', [{ commentText: 'moves it', from: { userId: 'bob' } }]);
  t.same(keys(), [1, 2, 11, 'old-b'], 'the changed thread left its old key for its number');
  await reloaded.remove({ annotationIds: ['old-b'] });
  t.same(keys(), [1, 2, 11], 'a deleted old row is removed under its old key');
  await reloaded.add([thread('after')]);
  t.same(keys(), [1, 2, 11, 13], 'a new thread takes the next number after the highest, old rows included');
  const again = AnnotationState.load({ store, outbox: new Outbox(store), now: () => 7_000 }, ref);
  t.same(again.find('old-a')?.comments.map((c) => c.commentText), ['first', 'moves it']);
  t.equal(again.find('old-b'), undefined);
});

t.test('a failed change of a schema-2 row leaves it under its old key, and the next change still moves it', async (t) => {
  const failing: { outbox?: FailingOutbox } = {};
  const { store } = open(t, (s) => (failing.outbox = new FailingOutbox(s)));
  const outbox = failing.outbox as FailingOutbox;
  outbox.failing = false;
  const db = store.records<unknown>(DB.annotations);
  const prefix = [ref.apiKey, ref.organizationId, ref.documentId];
  const seed = AnnotationState.load({ store, outbox, now: () => 1 }, { ...ref, documentId: 'seed' });
  await seed.add([thread('old')]);
  await db.put([...prefix, 'old'], seed.find('old'));
  const state = AnnotationState.load({ store, outbox, now: () => 2 }, ref);
  outbox.failing = true;
  await t.rejects(state.addComments('old', [{ commentText: 'lost', from: { userId: 'bob' } }]), { message: 'disk said no' });
  t.same(Array.from(db.getKeys({ start: prefix, end: [...prefix, KEY_END] }), (key) => (key as unknown[])[3]), ['old']);
  outbox.failing = false;
  await state.addComments('old', [{ commentText: 'kept', from: { userId: 'bob' } }]);
  t.same(Array.from(db.getKeys({ start: prefix, end: [...prefix, KEY_END] }), (key) => (key as unknown[])[3]), [1]);
});
