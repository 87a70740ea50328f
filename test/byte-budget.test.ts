import t from 'tap';
import { BYTE_BURST_SECONDS, ByteBudget } from '../src/byte-budget.js';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let time = start;
  return { now: () => time, advance: (ms) => (time += ms) };
}

t.test('a key spends its burst, then waits for the refill; the wait is the time until the charge fits', async (t) => {
  const c = clock();
  const budget = new ByteBudget({ bytesPerSecond: 1000, largestCharge: 100, maxKeys: 10, now: c.now });
  t.equal(BYTE_BURST_SECONDS, 8);
  t.equal(budget.charge('k', 5000), 0);
  t.equal(budget.charge('k', 3000), 0, 'eight seconds of the rate at once');
  t.equal(budget.charge('k', 500), 0.5, 'nothing left: half a second until 500 bytes fit');
  t.equal(budget.charge('other', 8000), 0, 'another key has its own bucket');
  c.advance(200);
  t.equal(budget.charge('k', 100), 0, 'a small charge fits as soon as the refill covers it');
  t.equal(budget.charge('k', 500), 0.4, 'the refused charge took nothing');
  c.advance(400);
  t.equal(budget.charge('k', 500), 0);
  c.advance(60_000);
  t.equal(budget.charge('k', 8000), 0, 'a rested key has a full bucket again');
  t.equal(budget.charge('k', 1), 0.001);
});

t.test('the bucket holds at least the largest frame or body, so each passes on a rested key', async (t) => {
  const c = clock();
  const budget = new ByteBudget({ bytesPerSecond: 100, largestCharge: 16_000, maxKeys: 10, now: c.now });
  t.equal(budget.charge('k', 16_000), 0, 'twenty times the burst, accepted whole');
  t.equal(budget.charge('k', 16_000), 160, 'and again after its bytes are refilled');
});

t.test('a rate of 0 is off; keys past maxKeys are forgotten, least recently charged first', async (t) => {
  const off = new ByteBudget({ bytesPerSecond: 0, largestCharge: 1, maxKeys: 1 });
  t.equal(off.enabled, false);
  t.equal(off.charge('k', 1e12), 0);
  const c = clock();
  const budget = new ByteBudget({ bytesPerSecond: 10, largestCharge: 0, maxKeys: 2, now: c.now });
  t.equal(budget.charge('a', 80), 0);
  t.ok(budget.charge('a', 1) > 0, 'a is spent');
  t.equal(budget.charge('b', 80), 0);
  t.equal(budget.charge('c', 80), 0, 'a third key: the least recently charged (a) is forgotten');
  t.equal(budget.charge('a', 80), 0, 'a comes back rested');
  t.ok(budget.charge('c', 1) > 0, 'c was kept');
});

t.test('shared (cluster mode): what was taken here is told once, what others took is taken here, in debt of one bucket at most', async (t) => {
  const c = clock();
  const budget = new ByteBudget({ bytesPerSecond: 1000, largestCharge: 100, maxKeys: 2, now: c.now });
  t.equal(budget.charge('k', 100), 0, 'before sharing starts');
  const usage = budget.share();
  t.same(usage.takenSince(), [], 'nothing is kept before share()');
  t.equal(budget.charge('k', 300), 0);
  t.equal(budget.charge('k', 200), 0);
  t.equal(budget.charge('j', 50), 0);
  t.equal(budget.charge('k', 9000), 1.6, 'a refused charge takes nothing (7,400 bytes left: 1.6 s until 9,000 fit)');
  t.equal(budget.charge('x', 10), 0, 'a third key past maxKeys (2) is charged but not shared');
  t.same(usage.takenSince(), [['k', 500], ['j', 50]], 'what each key took here, once');
  t.same(usage.takenSince(), [], 'and forgotten once told');

  usage.takenElsewhere('k', 7000);
  t.equal(budget.charge('k', 500), 0.1, 'another node took most of the burst: 400 bytes left here');
  usage.takenElsewhere('k', 50_000);
  t.equal(budget.charge('k', 1), 8.001, 'a debt of one full bucket at most (8,000 bytes), then the refill');
  c.advance(8_001);
  t.equal(budget.charge('k', 1), 0, 'back once the refill covers the debt');
  usage.takenElsewhere('fresh', 3000);
  t.equal(budget.charge('fresh', 5000), 0, 'a key first heard of from elsewhere starts full, less what was taken there');
  t.equal(budget.charge('fresh', 1), 0.001);
});
