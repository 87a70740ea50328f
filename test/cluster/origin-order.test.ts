// Tests the applier's per-origin order: a message that lands late does not undo later writes of its origin; a second copy is dropped.
import t from 'tap';
import { OriginOrder } from '../../src/cluster/origin-order.js';
import type { RangeRemoval, ReplicatedOp } from '../../src/store/replication.js';

const put = (key: string, value: number): ReplicatedOp => ['domains', [key], value];
/** A log entry of document d, and the removal of entries [from, to) (a snapshot fold). */
const entry = (seq: number, value: number): ReplicatedOp => ['doc-updates', ['k', 'o', 'd', 'e', seq], value];
const fold = (from: number, to: number): RangeRemoval => ['doc-updates', ['k', 'o', 'd', 'e'], from, to];

t.test('in order: everything applies, once', async (t) => {
  const order = new OriginOrder();
  t.same(order.admit('a', 1, [put('k', 1)]), [put('k', 1)]);
  t.same(order.admit('a', 2, [put('k', 2)]), [put('k', 2)]);
  t.equal(order.admit('a', 2, [put('k', 2)]), undefined, 'a second copy is dropped');
  t.equal(order.admit('a', 1, [put('k', 1)]), undefined, 'so is an old one');
  t.same(order.admit('b', 7, [put('k', 9)]), [put('k', 9)], 'origins are counted apart; the first seen starts the count');
});

t.test('a late message skips the keys later messages of its origin wrote, and applies the others', async (t) => {
  const order = new OriginOrder();
  order.admit('a', 1, [put('x', 1)]);
  t.same(order.admit('a', 3, [put('k', 3)]), [put('k', 3)], 'message 2 is missing');
  t.same(order.admit('a', 4, [put('j', 4)]), [put('j', 4)]);
  t.same(order.admit('a', 2, [put('k', 2), put('m', 2), put('j', 2)]), [put('m', 2)], 'only the key no later message wrote');
  t.equal(order.admit('a', 2, [put('k', 2)]), undefined, 'the gap is closed: a copy is dropped');
  t.same(order.admit('a', 5, [put('k', 5)]), [put('k', 5)]);
});

t.test('a jump wider than any gap restarts the count instead of waiting for thousands of messages', async (t) => {
  const order = new OriginOrder();
  order.admit('a', 1, [put('k', 1)]);
  t.same(order.admit('a', 50_000, [put('k', 2)]), [put('k', 2)]);
  t.same(order.admit('a', 50_001, [put('k', 3)]), [put('k', 3)]);
  t.equal(order.admit('a', 2, [put('k', 0)]), undefined, 'nothing below the new start is waited for');
});

t.test('open gaps survive a restart through changes() and restore()', async (t) => {
  const order = new OriginOrder();
  order.admit('a', 1, [put('x', 1)]);
  t.equal(order.changes(), undefined, 'no gap: nothing to store');
  order.admit('a', 3, [put('k', 3)]);
  order.admit('b', 1, [put('k', 1)]);
  const gaps = order.changes();
  t.same(gaps, [['a', 3, [2], [['domains\u0000["k"]', 3]], []]], 'only the origin with a gap is stored, with its keys');
  t.equal(order.changes(), undefined, 'nothing changed since');
  const restarted = new OriginOrder();
  restarted.restore(JSON.parse(JSON.stringify(gaps)) as unknown);
  t.same(restarted.admit('a', 2, [put('k', 2), put('m', 2)]), [put('m', 2)], 'the late message still skips the later key');
  t.equal(restarted.admit('a', 2, [put('k', 2)]), undefined, 'and a copy of it is dropped');
  t.same(restarted.changes(), [], 'the closed gap is stored as none');
  restarted.restore('not gaps');
  restarted.restore([['a', 'x', [], []], 7]);
  t.same(restarted.admit('c', 1, [put('k', 1)]), [put('k', 1)], 'unreadable stored gaps are ignored');
});

t.test('a late message: its writes inside a later range removal are dropped, its range removal leaves later writes', async (t) => {
  const order = new OriginOrder();
  order.admit('a', 1, [entry(1, 1)]);
  t.same(order.admit('a', 3, [fold(0, 5)]), [fold(0, 5)], 'message 2 is missing; 3 folds entries 0..4');
  t.same(order.admit('a', 4, [entry(7, 4)]), [entry(7, 4)]);
  const late = order.admit('a', 2, [entry(2, 2), entry(6, 2), fold(0, 10)]);
  t.equal(late?.length, 2, 'entry 2 is dropped: message 3 removed it');
  t.same(late?.[0], entry(6, 2), 'entry 6 is outside the later removal: kept');
  const removal = late?.[1] as RangeRemoval;
  t.same(removal.slice(0, 4), fold(0, 10), 'the late removal is kept');
  t.same([...(removal[4] ?? [])], ['doc-updates\u0000["k","o","d","e",7]'], 'but leaves the entry message 4 wrote');
  t.same(order.admit('a', 5, [fold(0, 3)]), [fold(0, 3)], 'no gap: a removal is applied as it is');
});

t.test('a range removal of a later message survives a restart in the stored gap', async (t) => {
  const order = new OriginOrder();
  order.admit('a', 1, [entry(1, 1)]);
  order.admit('a', 3, [fold(0, 5)]);
  const gaps = order.changes();
  t.same(gaps, [['a', 3, [2], [], [['doc-updates', ['k', 'o', 'd', 'e'], 0, 5, 3]]]]);
  const restarted = new OriginOrder();
  restarted.restore(JSON.parse(JSON.stringify(gaps)) as unknown);
  t.same(restarted.admit('a', 2, [entry(3, 2), entry(5, 2)]), [entry(5, 2)], 'the late write inside the removed range is dropped');
  const older = new OriginOrder();
  older.restore([['a', 3, [2], [['domains\u0000["k"]', 3]]]]);
  t.same(older.admit('a', 2, [put('k', 2), put('m', 2)]), [put('m', 2)], 'gaps stored before ranges existed (four elements) still read');
});
