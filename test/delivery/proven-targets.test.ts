// Tests the stored record of proven delivery targets: written once, refreshed at most daily, read back after a restart, pruned when old.
import t from 'tap';
import { KEEP_PROVEN_MS, ProvenTargets } from '../../src/delivery/proven-targets.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';

const DAY = 24 * 60 * 60 * 1000;

t.test('a proof is stored with its settlement, read back by a new process, refreshed daily, and pruned after 30 days without a success', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const rows = store.records<number>(DB.deliveryProven);
  const t0 = Date.UTC(2026, 10, 28);
  const proven = new ProvenTargets(store);
  t.notOk(proven.has('adv:a'), 'never delivered to: unproven');
  await store.transaction((tx) => {
    proven.record(tx, 'adv:a', t0);
    proven.record(tx, 'adv:b', t0);
  });
  t.equal(rows.get('adv:a'), t0);
  await store.transaction((tx) => proven.record(tx, 'adv:a', t0 + DAY / 2));
  t.equal(rows.get('adv:a'), t0, 'a success within the day writes nothing');
  await store.transaction((tx) => proven.record(tx, 'adv:b', t0 + 2 * DAY));
  t.equal(rows.get('adv:b'), t0 + 2 * DAY, 'a success a day later refreshes the row');
  const restarted = new ProvenTargets(store);
  t.ok(restarted.has('adv:a') && restarted.has('adv:b'), 'a new process (nothing in memory) reads them back');
  t.notOk(restarted.has('adv:c'));
  // The runner's pass cuts at now - KEEP_PROVEN_MS: t0 on the 30th day after t0, then a moment later.
  t.equal(await restarted.prune((t0 + KEEP_PROVEN_MS) - KEEP_PROVEN_MS, () => false), 0, 'on the 30th day: nothing older yet');
  t.equal(await restarted.prune(t0 + 1, () => false), 1, 'a moment later a, unrefreshed since t0, goes; b, refreshed, stays');
  t.notOk(restarted.has('adv:a'), 'and must prove itself again');
  t.ok(restarted.has('adv:b'));
});

t.test('pruning walks a table larger than its slice', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const proven = new ProvenTargets(store);
  await store.transaction((tx) => {
    for (let i = 0; i < 2500; i++) proven.record(tx, `adv:${String(i).padStart(4, '0')}`, i % 2 === 0 ? 1 : 1_000_000);
  });
  t.equal(await proven.prune(1000, () => false), 1250, 'every old row over three slices');
  t.equal(Array.from(store.records<number>(DB.deliveryProven).getKeys({})).length, 1250);
});
