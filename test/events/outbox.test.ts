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

t.test('a claim that finds nothing claimable writes nothing (an idle dispatcher polls without committing)', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  let writes = 0;
  const transaction = store.transaction.bind(store);
  store.transaction = ((body: Parameters<typeof transaction>[0]) => {
    writes++;
    return transaction(body);
  }) as typeof store.transaction;
  t.same(await outbox.claim({ limit: 10, leaseMs: 1000, now: 100 }), [], 'empty outbox');
  t.equal(writes, 0, 'no write transaction for an empty outbox');
  await store.transaction((tx) => outbox.append(tx, draft('comment.add'), 1));
  writes = 0;
  t.equal((await outbox.claim({ limit: 10, leaseMs: 1000, now: 100 })).length, 1);
  t.equal(writes, 1, 'a claimable event is claimed in a write transaction');
  t.same(await outbox.claim({ limit: 10, leaseMs: 1000, now: 200 }), [], 'leased: nothing claimable');
  t.equal(writes, 1, 'and no write transaction for it');
  t.equal((await outbox.claim({ limit: 10, leaseMs: 1000, now: 1100 })).length, 1, 'the lapsed lease is claimed again');
});
