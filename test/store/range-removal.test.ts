// Tests range removals of numbered rows: one replicated op for a snapshot fold, applied by the same rule on every node, losing to this node's own pending writes.
import type { Key } from 'lmdb';
import t, { type Test } from 'tap';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { keyId, removeNumbered, type RangeRemoval, type ReplicatedOp, type Replication } from '../../src/store/replication.js';

/** A port that keeps what it is given and acknowledges at once (the applier's side is driven by hand here). */
class KeptPort implements Replication {
  readonly published: Array<readonly ReplicatedOp[]> = [];

  publish(ops: readonly ReplicatedOp[]): Promise<void> {
    this.published.push(ops);
    return Promise.resolve();
  }
}

const PREFIX = ['key', 'org', 'doc', 'editor'];
const entry = (seq: number): Key => [...PREFIX, seq];
const bytes = (n: number): Uint8Array => new Uint8Array([n]);

/** Log entries 0..9, one of another editor, and a longer key under the same prefix. */
async function seed(store: Store): Promise<void> {
  const updates = store.binary(DB.docUpdates);
  await store.transaction(() => {
    for (let seq = 0; seq < 10; seq++) void updates.put(entry(seq), bytes(seq));
    void updates.put(['key', 'org', 'doc', 'other', 3], bytes(99));
    void updates.put([...PREFIX, 4, 'x'], bytes(98));
  });
}

const held = (store: Store): number[] =>
  [...store.binary(DB.docUpdates).getKeys({})].map((key) => ((key as unknown[]).length === 5 && (key as unknown[])[3] === 'editor' ? ((key as unknown[])[4] as number) : -1)).filter((n) => n >= 0);

const open = (t: Test, port?: Replication): Store => {
  const store = Store.open(t.testdir(), port === undefined ? {} : { replication: port });
  t.teardown(() => store.close());
  return store;
};

t.test('removeNumbered removes [...prefix, n] for from <= n < to and nothing else', async (t) => {
  const store = open(t);
  await seed(store);
  await store.transaction(() => removeNumbered(store.binary(DB.docUpdates), PREFIX, 2, 6));
  t.same(held(store), [0, 1, 6, 7, 8, 9], 'entries 2..5 are gone, 6 (the bound) stays');
  t.same(store.binary(DB.docUpdates).get(['key', 'org', 'doc', 'other', 3]), bytes(99), "another editor's entry stays");
  t.same(store.binary(DB.docUpdates).get([...PREFIX, 4, 'x']), bytes(98), 'a longer key under the prefix stays');
});

t.test('in cluster mode a range removal is published as one op, and another node applies it by the same rule', async (t) => {
  const port = new KeptPort();
  const writer = open(t, port);
  await seed(writer);
  await writer.transaction(() => removeNumbered(writer.binary(DB.docUpdates), PREFIX, 0, 5));
  const last = port.published.at(-1);
  t.same(last, [[DB.docUpdates, PREFIX, 0, 5]], 'one op, not five removes');
  t.same(held(writer), [5, 6, 7, 8, 9]);

  const reader = open(t, new KeptPort());
  for (const ops of port.published) await reader.applyReplicated(ops, { key: 'applied', value: 1 });
  t.same(held(reader), [5, 6, 7, 8, 9], 'the same rows on the applying node');
  t.same(reader.binary(DB.docUpdates).get([...PREFIX, 4, 'x']), bytes(98), 'the longer key stays there too');
});

t.test("a foreign range removal leaves this node's pending writes; a foreign write inside its pending removal is skipped", async (t) => {
  const store = open(t, new KeptPort());
  const updates = store.binary(DB.docUpdates);
  await store.applyReplicated(
    Array.from({ length: 6 }, (_, seq): ReplicatedOp => [DB.docUpdates, entry(seq), bytes(seq)]),
    { key: 'applied', value: 1 },
  );
  // This node's own write of entry 2, not yet reached by its applier: it comes later in the stream than what follows.
  const own: ReplicatedOp[] = [[DB.docUpdates, entry(2), bytes(20)]];
  await store.transaction(() => void updates.put(entry(2), bytes(20)));
  const foreign: RangeRemoval = [DB.docUpdates, PREFIX, 0, 4];
  await store.applyReplicated([foreign], { key: 'applied', value: 2 });
  t.same(held(store), [2, 4, 5], 'entries 0, 1 and 3 removed; 2 is held by the pending own write');
  t.same(updates.get(entry(2)), bytes(20));

  await store.applyReplicated([foreign], { key: 'applied', value: 3 }, new Set<ReplicatedOp>([foreign]));
  t.same(held(store), [4, 5], 'a forced removal (a newer owner) removes it anyway');

  store.ownApplied(own);
  await store.transaction(() => removeNumbered(updates, PREFIX, 0, 10));
  await store.applyReplicated([[DB.docUpdates, entry(7), bytes(7)], [DB.docUpdates, entry(12), bytes(12)]], { key: 'applied', value: 4 });
  t.same(held(store), [12], "a foreign write of entry 7 loses to the own pending removal of 0..9; 12 is outside it");
});

t.test("a late message's range removal leaves the keys in its except set", async (t) => {
  const store = open(t, new KeptPort());
  await store.applyReplicated(
    Array.from({ length: 4 }, (_, seq): ReplicatedOp => [DB.docUpdates, entry(seq), bytes(seq)]),
    { key: 'applied', value: 1 },
  );
  const late: RangeRemoval = [DB.docUpdates, PREFIX, 0, 4, new Set([keyId([DB.docUpdates, entry(1)])])];
  await store.applyReplicated([late], { key: 'applied', value: 2 });
  t.same(held(store), [1], 'entry 1, written by a later message, stays');
});
