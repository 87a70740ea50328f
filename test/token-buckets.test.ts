import t from 'tap';
import { SyncCpuBudget } from '../src/doc/sync-cpu.js';
import { TokenBuckets } from '../src/token-buckets.js';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void; reads: () => number } {
  let time = start;
  let reads = 0;
  return {
    now: () => {
      reads++;
      return time;
    },
    advance: (ms) => (time += ms),
    reads: () => reads,
  };
}

t.test('the key touched last is served without moving it, and the least recently used key is still the one forgotten', async (t) => {
  const c = clock();
  const buckets = new TokenBuckets({ capacity: 10, refillPerMs: 0.001, maxKeys: 2, now: c.now });
  t.equal(buckets.take('a', 10), 0);
  t.equal(buckets.take('b', 10), 0);
  t.equal(buckets.take('b', 1), 1, 'b again, spent: the key touched last');
  t.equal(buckets.take('a', 1), 1, 'a again: a is now the most recently used');
  t.equal(buckets.take('a', 1), 1, 'and again, touched last');
  t.equal(buckets.take('c', 10), 0, 'a third key: b, the least recently used, is forgotten');
  t.equal(buckets.take('a', 1), 1, 'a was kept, still spent');
  t.equal(buckets.take('b', 10), 0, 'b comes back rested (forgetting c, used before a)');
  t.equal(buckets.take('a', 1), 1, 'a was kept again');
  t.equal(buckets.size, 2);
  c.advance(5_000);
  t.equal(buckets.take('a', 5), 0, 'the key touched last is refilled as any other');
  t.equal(buckets.take('a', 1), 1);
});

t.test('hasAny on the key touched last, with tokens left, reads no clock; in debt it waits for the refill', async (t) => {
  const c = clock();
  const buckets = new TokenBuckets({ capacity: 200, refillPerMs: 0.1, maxKeys: 10, now: c.now, maxDebt: 6_000 });
  buckets.spend('k', 150);
  const before = c.reads();
  t.ok(buckets.hasAny('k'), '50 left');
  t.equal(c.reads(), before, 'a bucket that held tokens holds them after any refill');
  buckets.spend('other', 1);
  t.ok(buckets.hasAny('k'), 'after another key, k is looked up and refilled');
  buckets.spend('k', 1_000);
  t.notOk(buckets.hasAny('k'), 'in debt');
  c.advance(9_000);
  t.notOk(buckets.hasAny('k'), '950 of debt, 900 refilled');
  c.advance(600);
  t.ok(buckets.hasAny('k'), 'paid back, 10 to spare');
});

t.test('a frame is timed by the budget\'s clock, with two reads, whose last is the refill time', async (t) => {
  const c = clock();
  const budget = new SyncCpuBudget(100, c.now);
  const frame = (ms: number, seen: string[], tag: string): void => {
    seen.push(tag);
    c.advance(ms);
  };
  const seen: string[] = [];
  t.notOk(budget.refuses('k'));
  const before = c.reads();
  t.notOk(budget.refuses('k'), 'checked again');
  budget.timed('k', frame, 150, seen, 'first');
  t.equal(c.reads() - before, 2, 'a check and a timed frame of the key touched last: two clock reads');
  t.same(seen, ['first'], 'the frame ran with its arguments');
  t.notOk(budget.refuses('k'), '150 of 200 ms spent');
  budget.timed('k', frame, 300, seen, 'second');
  t.ok(budget.refuses('k'), 'a frame of 300 ms on the budget\'s clock put the key in debt');
  c.advance(2_500);
  t.notOk(budget.refuses('k'), '250 ms of debt paid back at 100 ms a second');
  t.throws(() => budget.timed('k', () => {
    c.advance(400);
    throw new Error('frame failed');
  }, 0, 0, 0), /frame failed/);
  t.ok(budget.refuses('k'), 'a frame that throws is spent all the same');
});
