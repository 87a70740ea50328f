// Tests src/events/outbox-lanes.ts: parking moves rows out of the outbox, lanes take turns in seq order, deletions read only their keys' lanes, and parked events survive a restart.
import t from 'tap';
import type { CommentPayload } from '../../src/doc/annotations/events.js';
import type { AnnotationView } from '../../src/doc/annotations/model.js';
import { Outbox } from '../../src/events/outbox.js';
import { OutboxLanes } from '../../src/events/outbox-lanes.js';
import type { EventDraft, OutboxEvent } from '../../src/events/types.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';

function draft(apiKey: string, documentId = 'd1'): EventDraft {
  const metadata = { apiKey, organizationId: 'o', documentId, document: { documentId }, organization: { organizationId: 'o' } };
  const data: CommentPayload = { commentAnnotation: { annotationId: `a-${documentId}` } as AnnotationView, metadata };
  return { type: 'comment.add', apiKey, organizationId: 'o', documentId, data };
}

/** Appends events for the keys in order and parks every one of them. */
async function parkAll(store: Store, outbox: Outbox, keys: readonly string[]): Promise<void> {
  await store.transaction((tx) => {
    keys.forEach((apiKey, i) => outbox.append(tx, draft(apiKey, `d${i}`), i + 1));
  });
  const claimed = await outbox.claim({ limit: 100, leaseMs: 1000, now: 0 });
  await store.transaction((tx) => outbox.parkIn(tx, claimed));
}

/** Takes every parked event, the lanes in turn, `perTurn` at most from each lane per turn. */
async function takeAll(store: Store, lanes: OutboxLanes, perTurn: number): Promise<Array<[string, number]>> {
  const taken: Array<[string, number]> = [];
  for (;;) {
    const more = await store.transaction((tx) => {
      const turn = lanes.nextTurn();
      if (turn === undefined) return false;
      let n = 0;
      for (const event of turn.events) {
        if (n++ === perTurn) break;
        taken.push([event.apiKey, event.seq]);
        lanes.remove(tx, event);
      }
      return true;
    });
    if (!more) return taken;
  }
}

t.test('parked rows leave the outbox, keep their data, and the lanes take turns, each in seq order', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await parkAll(store, outbox, ['A', 'A', 'B', 'A', 'C', 'B']);
  t.same(outbox.read(), [], 'the outbox is empty');
  t.equal(outbox.lanes.size, 3);
  t.ok(outbox.lanes.has('A') && !outbox.lanes.has('D'));
  const first = await store.transaction(() => {
    const turn = outbox.lanes.nextTurn();
    const events: OutboxEvent[] = [];
    for (const event of turn?.events ?? []) events.push(event);
    return events;
  });
  t.same(first.map((e) => [e.apiKey, e.seq, e.documentId]), [['A', 1, 'd0'], ['A', 2, 'd1'], ['A', 4, 'd3']], 'a turn reads its lane in seq order');
  t.match(first[0]?.data, { commentAnnotation: { annotationId: 'a-d0' } }, 'the payload is parked with the row');
  t.same(await takeAll(store, outbox.lanes, 1), [['B', 3], ['C', 5], ['A', 1], ['B', 6], ['A', 2], ['A', 4]], 'one from each lane in turn, the turn order going on from the last');
  t.equal(outbox.lanes.size, 0, 'emptied lanes lose their turn');
  t.equal(Array.from(store.records<unknown>(DB.outboxLanes).getKeys()).length, 0, 'and their rows');
});

t.test('cluster rows ([apiKey, seq, node]) sort within their key\'s lane, and a new reader finds every lane by seeking', async (t) => {
  const dir = t.testdir();
  let store = Store.open(dir);
  const nodes = [new Outbox(store, { node: 'n1' }), new Outbox(store, { node: 'n2' })];
  for (const [i, outbox] of nodes.entries()) {
    await store.transaction((tx) => {
      outbox.append(tx, draft('K2'), 10 + i);
      outbox.append(tx, draft('K1'), 20 + i);
    });
  }
  const claimed = await nodes[0]!.claim({ limit: 10, leaseMs: 1000, now: 0 });
  t.equal(claimed.length, 4);
  await store.transaction((tx) => nodes[0]!.parkIn(tx, claimed));
  await store.close();
  // A restart (or a dispatcher taking over on another node): the lanes are read from the database.
  store = Store.open(dir);
  t.teardown(() => store.close());
  const lanes = new OutboxLanes(store);
  t.equal(lanes.size, 2, 'both lanes found after the restart');
  const taken = await takeAll(store, lanes, 10);
  t.same(taken.map(([apiKey]) => apiKey), ['K1', 'K1', 'K2', 'K2'], 'each lane whole in its turn');
  t.ok(taken[0]![1] < taken[1]![1] && taken[2]![1] < taken[3]![1], 'in seq order within each');
});

t.test('removeWhere drops the matching parked events of the named keys only', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await parkAll(store, outbox, ['A', 'B', 'A', 'B']);
  await store.transaction((tx) => outbox.append(tx, draft('A', 'd0'), 9));
  // Another key's lane is not read: a match that would pick it is never asked about it.
  const asked = new Set<string>();
  const removed = await store.transaction((tx) => outbox.removeWhere(tx, new Set(['A']), (event) => (asked.add(event.apiKey), event.documentId === 'd0')));
  t.equal(removed, 2, 'the parked event and the one still in the outbox');
  t.same([...asked], ['A']);
  t.same(await takeAll(store, outbox.lanes, 10), [['A', 3], ['B', 2], ['B', 4]]);
});

t.test('a lane emptied by a deletion loses its turn, and an event removed after it was read is not held', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  await parkAll(store, outbox, ['A', 'B']);
  const [a] = outbox.lanes.nextTurn()?.events ?? [];
  t.ok(a !== undefined && outbox.lanes.holds(a));
  await store.transaction((tx) => outbox.removeWhere(tx, new Set(['A']), () => true));
  t.notOk(outbox.lanes.holds(a!), 'removed since it was read');
  t.equal(outbox.lanes.nextTurn()?.apiKey, 'B', 'B is next');
  t.equal(outbox.lanes.nextTurn()?.apiKey, 'B', 'and A, empty, has no turn');
  t.equal(outbox.lanes.size, 1);
});
