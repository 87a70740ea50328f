// Tests src/store/group-commit.ts: one LMDB transaction per turn, per-change rollback, failed commits, one batch in flight.
import t from 'tap';
import { Store } from '../../src/store/env.js';
import { GroupCommit, type GroupedChange, type TransactionRoot } from '../../src/store/group-commit.js';
import { DB } from '../../src/store/keys.js';
import { openStore, rootOf } from '../helpers/store.js';

/** A change that writes `key` (optionally then throws) and records when it ran and how it settled. */
function change(
  store: Store,
  key: string,
  log: string[],
  options: { throws?: boolean; single?: boolean; onWrite?: () => void } = {},
): GroupedChange & { settled: Promise<unknown> } {
  const db = store.records<string>(DB.meta);
  let told!: (error: unknown) => void;
  const settled = new Promise<unknown>((resolve) => (told = resolve));
  return {
    single: options.single ?? false,
    settled,
    write: () => {
      log.push(`write ${key} txn ${rootOf(store).getWriteTxnId()}`);
      db.putSync(key, key);
      options.onWrite?.();
      if (options.throws === true) throw new Error(`${key} refused`);
    },
    settle: (error) => {
      log.push(`settle ${key} ${error === undefined ? 'ok' : 'failed'}`);
      told(error);
    },
  };
}

t.test('changes of one turn share one transaction; a change that throws loses only its own writes', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const log: string[] = [];
  const a = change(store, 'a', log);
  const b = change(store, 'b', log, { throws: true });
  const c = change(store, 'c', log);
  for (const each of [a, b, c]) store.group.submit(each);
  t.equal(await a.settled, undefined);
  t.match(await b.settled, { message: 'b refused' });
  t.equal(await c.settled, undefined);
  const txns = new Set(log.filter((line) => line.startsWith('write')).map((line) => line.split(' txn ')[1]));
  t.equal(txns.size, 1, 'one LMDB transaction for the three');
  t.same(log.filter((line) => line.startsWith('settle')), ['settle b failed', 'settle a ok', 'settle c ok'], 'a refused change is told at once, inside the batch');
  const meta = store.records<string>(DB.meta);
  t.same([meta.get('a'), meta.get('b'), meta.get('c')], ['a', undefined, 'c']);
});

t.test('a change marked single runs without a child transaction and still commits', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const log: string[] = [];
  const one = change(store, 'one', log, { single: true });
  store.group.submit(one);
  t.equal(await one.settled, undefined);
  t.equal(store.records<string>(DB.meta).get('one'), 'one');
});

t.test('a failed commit fails every change of the batch; the next batch runs only after it settled', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const log: string[] = [];
  let failNext = true;
  const root: TransactionRoot = {
    transaction: (body) => {
      const result = rootOf(store).transaction(body);
      if (!failNext) return result;
      failNext = false;
      // The transaction ran, then its commit failed (disk full, I/O error).
      return result.then(() => Promise.reject(new Error('commit failed: disk full')));
    },
    childTransaction: (body) => rootOf(store).childTransaction(body),
  };
  const group = new GroupCommit(root, (error) => t.fail(String(error)));
  const second = change(store, 'second', log);
  // Submitted while the first batch is being written: it must not run before the first batch has settled.
  const first = change(store, 'first', log, { onWrite: () => group.submit(second) });
  group.submit(first);
  t.match(await first.settled, { message: 'commit failed: disk full' });
  t.equal(await second.settled, undefined);
  const order = log.map((line) => line.replace(/ txn \d+/, ''));
  t.same(order, ['write first', 'settle first failed', 'write second', 'settle second ok']);
  await group.settled();
  t.equal(group.pending, 0);
});

t.test('barrier waits for the changes submitted before it; a closed group refuses new changes', async (t) => {
  const store = openStore(t.testdir());
  const log: string[] = [];
  const a = change(store, 'a', log);
  store.group.submit(a);
  await store.group.barrier();
  t.same(log.map((line) => line.replace(/ txn \d+/, '')), ['write a', 'settle a ok']);
  await store.close();
  const late = change(store, 'late', log);
  store.group.submit(late);
  t.match(await late.settled, { message: 'the store is closed' });
  t.notOk(log.some((line) => line.startsWith('write late')), 'a refused change never writes');
});
