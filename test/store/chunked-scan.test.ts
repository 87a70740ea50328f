// Tests the chunked range helpers: pages of matches resume exactly after their last item, and batched removal empties several ranges and nothing else.
import t from 'tap';
import { pageMatches, removeRangeInBatches, CHUNK_ROWS, REMOVE_BATCH } from '../../src/store/chunked-scan.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';

t.test('pageMatches pages through matches spread over several chunks: each once, in key order', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const db = store.records<number>(DB.presence);
  const total = CHUNK_ROWS * 3 + 7;
  await store.transaction(() => {
    for (let i = 0; i < total; i++) db.putSync(['k', 'o', i], i);
    db.putSync(['other', 'o', 1], 1);
  });
  const wanted = Array.from({ length: total }, (_, i) => i).filter((i) => i % 13 === 0);
  const got: number[] = [];
  let after: unknown[] | undefined;
  let pages = 0;
  do {
    const page = await pageMatches(db, ['k'], after as never, 40, (_key, value) => (value % 13 === 0 ? value : undefined));
    got.push(...page.items);
    after = page.next as unknown[] | undefined;
    pages++;
    if (after !== undefined) t.equal(page.items.length, 40, 'a page with a next cursor is full');
  } while (after !== undefined && pages < 100);
  t.same(got, wanted, 'every match once, in order');
  t.equal(pages, Math.ceil(wanted.length / 40));
  t.same((await pageMatches(db, ['k'], undefined, 5, () => undefined)).items, [], 'no match: an empty page, no cursor');
});

t.test('removeRangeInBatches empties the prefix in every database over several batches and keeps everything else', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const a = store.records<number>(DB.presence);
  const b = store.records<number>(DB.liveState);
  await store.transaction(() => {
    for (let i = 0; i < REMOVE_BATCH - 1; i++) a.putSync(['k', 'o', i], i);
    for (let i = 0; i < REMOVE_BATCH + 3; i++) b.putSync(['k', 'o', 'd', i], i);
    a.putSync(['k', 'p', 1], 1);
    b.putSync(['k', 'oo', 1], 1);
  });
  t.equal(await removeRangeInBatches(store, [a, b], ['k', 'o']), REMOVE_BATCH * 2 + 2, 'every row under the prefix, counted');
  t.same(Array.from(a.getKeys()), [['k', 'p', 1]], 'the rest of the first database stays');
  t.same(Array.from(b.getKeys()), [['k', 'oo', 1]], 'and of the second (a longer id is another range)');
  t.equal(await removeRangeInBatches(store, [a, b], ['k', 'o']), 0, 'again: nothing left');
});
