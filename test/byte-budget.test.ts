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
