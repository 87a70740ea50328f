// Tests src/events/outbox.ts: seq order, all-or-nothing transactions, claim leases and ack.
import t from 'tap';
import { Outbox } from '../../src/events/outbox.js';
import type { CommentPayload } from '../../src/doc/annotations/events.js';
import type { EventDraft } from '../../src/events/types.js';
import type { AnnotationView } from '../../src/doc/annotations/model.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';

function draft(type: EventDraft['type'], documentId = 'd1'): EventDraft {
  const metadata = { apiKey: 'k', organizationId: 'o', documentId, document: { documentId }, organization: { organizationId: 'o' } };
  const data: CommentPayload = { commentAnnotation: { annotationId: 'a' } as AnnotationView, metadata };
  return { type, apiKey: 'k', organizationId: 'o', documentId, data };
}

t.test('appends get strictly increasing seqs across transactions and within one', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await store.transaction((tx) => {
    outbox.append(tx, draft('comment.add'), 1);
    outbox.append(tx, draft('comment.update'), 2);
  });
  await store.transaction((tx) => outbox.append(tx, draft('comment.delete'), 3));
  const events = outbox.read();
  t.same(events.map((e) => [e.seq, e.type, e.actionType]), [
    [1, 'comment.add', 'added'],
    [2, 'comment.update', 'updated'],
    [3, 'comment.delete', 'deleted'],
  ]);
  t.equal(new Set(events.map((e) => e.id)).size, 3, 'each event has its own id');
  t.same(outbox.read({ afterSeq: 1, limit: 1 }).map((e) => e.seq), [2]);
});

t.test('a transaction that throws after writing leaves neither its change nor its event', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  const records = store.records<string>(DB.annotations);
  await t.rejects(
    store.transaction((tx) => {
      records.putSync(['k', 'o', 'd1', 'a1'], 'change');
      outbox.append(tx, draft('comment_annotation.add'), 1);
      throw new Error('commit refused');
    }),
    { message: 'commit refused' },
  );
  t.equal(records.get(['k', 'o', 'd1', 'a1']), undefined, 'the change did not land');
  t.same(outbox.read(), [], 'the event did not land');
  await store.transaction((tx) => outbox.append(tx, draft('comment_annotation.add'), 2));
  t.same(outbox.read().map((e) => e.seq), [1], 'the next event takes the first seq: the aborted one left no gap');
});

t.test('claim leases events until the lease lapses; ack removes them', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await store.transaction((tx) => {
    for (let i = 0; i < 3; i++) outbox.append(tx, draft('comment.add'), i);
  });
  const first = await outbox.claim({ limit: 2, leaseMs: 1000, now: 10_000 });
  t.same(first.map((e) => [e.seq, e.attempts, e.claimedUntil]), [
    [1, 1, 11_000],
    [2, 1, 11_000],
  ]);
  const second = await outbox.claim({ limit: 5, leaseMs: 1000, now: 10_500 });
  t.same(second.map((e) => e.seq), [3], 'leased events are skipped while the lease holds');
  await outbox.ack([1, 3, 99]);
  const third = await outbox.claim({ limit: 5, leaseMs: 1000, now: 11_000 });
  t.same(third.map((e) => [e.seq, e.attempts]), [[2, 2]], 'an unacked event comes back after its lease, attempts counted');
  t.same(outbox.read().map((e) => e.seq), [2]);
});

t.test('Store.transaction refuses an asynchronous body', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  await t.rejects(store.transaction(async () => 1), /must be synchronous/);
});

t.test('appends through several Outbox objects over one store share the seq; an emptied outbox starts again at 1', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const a = new Outbox(store);
  const b = new Outbox(store);
  await store.transaction((tx) => {
    a.append(tx, draft('comment.add'), 1);
    b.append(tx, draft('comment.add'), 2);
    a.append(tx, draft('comment.add'), 3);
  });
  t.same(a.read().map((e) => e.seq), [1, 2, 3], 'no seq given twice');
  await a.ack([1, 2, 3]);
  await store.transaction((tx) => b.append(tx, draft('comment.add'), 4));
  t.same(a.read().map((e) => e.seq), [1], 'after every event was acked, the next is 1 again (as a scan of an empty outbox gives)');
});

t.test('a claim writes nothing: the lease is held in memory and the stored event is unchanged', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await store.transaction((tx) => outbox.append(tx, draft('comment.add'), 1));
  const stored = store.records<unknown>(DB.outbox).getBinary(1);
  const [claimed] = await outbox.claim({ limit: 10, leaseMs: 1000, now: 5_000 });
  t.same([claimed?.attempts, claimed?.claimedUntil], [1, 6_000], 'the claimed copy carries its lease');
  t.same(store.records<unknown>(DB.outbox).getBinary(1), stored, 'the row is byte for byte as appended');
  t.same(await new Outbox(store).claim({ limit: 10, leaseMs: 1000, now: 5_500 }), [], 'another Outbox over the store sees the lease');
});

t.test('an event stores its data as JSON text, read back as the payload it was; rows from before (data itself) still read', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  const written = draft('comment.add');
  await store.transaction((tx) => outbox.append(tx, written, 1));
  const row = store.records<{ payload?: unknown; data?: unknown }>(DB.outbox).get(1);
  t.equal(typeof row?.payload, 'string', 'the payload is stored as text');
  t.equal(row?.data, undefined);
  const [event] = outbox.read();
  t.same(event?.data, written.data, 'data reads back whole');
  t.same({ ...event }.data, written.data, 'a spread copies data (an own, enumerable property)');
  // A row as schema 1 wrote it: the event with its data object.
  const { data, ...header } = event as NonNullable<typeof event>;
  await store.records<unknown>(DB.outbox).put(2, { ...header, seq: 2, data });
  const [claimed] = await outbox.claim({ limit: 1, leaseMs: 10, now: 0 });
  t.same(claimed?.data, written.data, 'the new row claims first, its data whole');
  const old = (await outbox.claim({ limit: 1, leaseMs: 10, now: 0 }))[0];
  t.same([old?.seq, old?.data], [2, written.data], 'the old row reads as it was written');
});

t.test('ackIn removes events inside the transaction it is given: one that fails removes none', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await store.transaction((tx) => {
    outbox.append(tx, draft('comment.add'), 1);
    outbox.append(tx, draft('comment.add'), 2);
  });
  const claimed = await outbox.claim({ limit: 10, leaseMs: 1000, now: 0 });
  await t.rejects(
    store.transaction((tx) => {
      outbox.ackIn(tx, [1]);
      throw new Error('planning transaction failed');
    }),
  );
  t.same(outbox.read().map((e) => e.seq), [1, 2], 'nothing was removed');
  await store.transaction((tx) => outbox.ackIn(tx, claimed.map((e) => e.seq)));
  t.same(outbox.read(), [], 'acked in a transaction that committed');
});

t.test('in a cluster, two nodes appending the same seq write two rows, and the worker claims and acks both', async (t) => {
  // Two nodes' caches: each appends its first event with seq 1 (neither has seen the other's yet).
  const onA = Store.open(`${t.testdir()}/a`);
  const onB = Store.open(`${t.testdir()}/b`);
  t.teardown(async () => {
    await onA.close();
    await onB.close();
  });
  const a = new Outbox(onA, { node: 'a' });
  const b = new Outbox(onB, { node: 'b' });
  const seqA = await onA.transaction((tx) => a.append(tx, draft('comment.add', 'doc-a'), 1));
  const seqB = await onB.transaction((tx) => b.append(tx, draft('comment.add', 'doc-b'), 1));
  t.equal(seqA, seqB, 'both nodes picked seq 1');
  // What the state stream's applier does on node a: B's row lands under B's key, beside A's.
  const rowsOfB = [...onB.records<unknown>(DB.outbox).getRange({})];
  await onA.transaction(() => {
    for (const { key, value } of rowsOfB) void onA.records<unknown>(DB.outbox).put(key, value);
  });
  const claimed = await a.claim({ limit: 10, leaseMs: 1000, now: 1 });
  t.same(claimed.map((e) => [e.seq, e.node, e.documentId]).sort(), [[1, 'a', 'doc-a'], [1, 'b', 'doc-b']], 'both events are there and claimed');
  t.same(await a.claim({ limit: 10, leaseMs: 1000, now: 2 }), [], 'each is leased apart (no shared lease by seq)');
  t.equal((await onA.transaction((tx) => a.append(tx, draft('comment.update', 'doc-a'), 3))), 2, 'the next seq follows the highest');
  await a.ack(claimed);
  t.same(a.read().map((e) => [e.seq, e.node]), [[2, 'a']], 'acking removes exactly the two claimed rows');
});

t.test('a claim takes rows this process appended as written, and never a row whose transaction failed', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  const claimAll = (now: number): Promise<Array<{ seq: number; type: string; id: string; documentId: string }>> =>
    outbox.claim({ limit: 1000, leaseMs: 1, now }).then((events) => events.map((e) => ({ seq: e.seq, type: e.type, id: e.id, documentId: e.documentId })));

  // An append whose transaction fails: its row stays in memory until forgotten, but the database does not hold it.
  let failedSeq = 0;
  await t.rejects(
    store.transaction((tx) => {
      failedSeq = outbox.append(tx, draft('comment.add', 'failed'), 1);
      throw new Error('refused');
    }),
  );
  t.same(await claimAll(10), [], 'a row of a failed transaction is not claimed');

  // The same seq appended again, before the failure was told (forget comes late): the claim takes the new row.
  const second = draft('comment.update', 'second');
  await store.transaction((tx) => t.equal(outbox.append(tx, second, 2), failedSeq, 'the seq is taken again'));
  t.equal((await outbox.claim({ limit: 1, leaseMs: 1, now: 15 }))[0]?.data, second.data, "from memory: the draft's own payload, not a parse of its JSON");
  const fromMemory = await claimAll(20);
  t.same(fromMemory.map((e) => [e.seq, e.type, e.documentId]), [[failedSeq, 'comment.update', 'second']]);
  outbox.forget([failedSeq]);
  const fromDisk = await claimAll(30);
  t.same(fromDisk, fromMemory, 'read back from the database after forget: the same event');
  const parsed = (await outbox.claim({ limit: 1, leaseMs: 1, now: 35 }))[0]?.data;
  t.not(parsed, second.data, 'from the database: parsed from the row');
  t.same(parsed, second.data, 'to the same payload');
  t.equal(fromDisk[0]?.id, fromMemory[0]?.id);

  // Another Outbox over another store handle reads the rows from disk: the same events as this process's memory.
  for (let i = 0; i < 300; i++) await store.transaction((tx) => outbox.append(tx, draft('comment.add', `d${i}`), 40 + i));
  const here = await claimAll(1000);
  t.equal(here.length, 301, 'more rows than the process keeps in memory are all claimed');
  const other = Store.open(store.path);
  t.teardown(() => other.close());
  const there = await new Outbox(other).claim({ limit: 1000, leaseMs: 1, now: 1000 });
  t.same(here, there.map((e) => ({ seq: e.seq, type: e.type, id: e.id, documentId: e.documentId })));
  t.same((await outbox.claim({ limit: 1, leaseMs: 1, now: 2000 }))[0]?.data, there[0]?.data, 'the payload reads the same');
});

t.test('an append whose key is not the last in the database is written all the same (MDB_APPEND refuses it)', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await store.transaction((tx) => outbox.append(tx, draft('comment.add', 'first'), 1));
  // A row past the next seq, as nothing in one process writes: the next append cannot go at the end.
  const foreign = (await new Outbox(store).read())[0];
  await store.records<unknown>(DB.outbox).put(50, { ...foreign, seq: 50 });
  const seq = await store.transaction((tx) => outbox.append(tx, draft('comment.update', 'second'), 2));
  t.equal(seq, 2, 'the seq follows the last this process appended');
  t.same(outbox.read().map((e) => [e.seq, e.documentId]), [
    [1, 'first'],
    [2, 'second'],
    [50, 'first'],
  ]);
});
