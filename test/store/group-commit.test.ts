// Tests src/store/group-commit.ts: one LMDB transaction per turn, per-change rollback, failed commits, one batch in flight.
import t, { type Test } from 'tap';
import { Store } from '../../src/store/env.js';
import { GroupCommit, type GroupedChange, type TransactionRoot } from '../../src/store/group-commit.js';
import { DB } from '../../src/store/keys.js';
import { openStore, rootOf } from '../helpers/store.js';

/** A change that writes `key` (optionally then throws) and records when it ran and how it settled. */
function change(
  store: Store,
  key: string,
  log: string[],
  options: { throws?: boolean; single?: boolean; bounded?: boolean; repeatable?: boolean; deferrable?: boolean; onWrite?: () => void } = {},
): GroupedChange & { settled: Promise<unknown> } {
  const db = store.records<string>(DB.meta);
  let told!: (error: unknown) => void;
  const settled = new Promise<unknown>((resolve) => (told = resolve));
  return {
    single: options.single ?? false,
    bounded: options.bounded ?? false,
    repeatable: options.repeatable ?? false,
    deferrable: options.deferrable ?? false,
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

/** A group commit on `store` that counts the child transactions it opens. */
function counting(t: Test, store: Store): { group: GroupCommit; children: () => number } {
  let children = 0;
  const root: TransactionRoot = {
    transaction: (body) => rootOf(store).transaction(body),
    childTransaction: (body) => {
      children++;
      return rootOf(store).childTransaction(body);
    },
  };
  return { group: new GroupCommit(root, (error) => t.fail(String(error))), children: () => children };
}

t.test('bounded changes share one child transaction, the batch\'s; a change that may be refused keeps its own', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const { group, children } = counting(t, store);
  const log: string[] = [];
  const changes = [change(store, 'b1', log, { bounded: true }), change(store, 'b2', log, { bounded: true }), change(store, 'own', log), change(store, 'b3', log, { bounded: true })];
  for (const each of changes) group.submit(each);
  for (const each of changes) t.equal(await each.settled, undefined);
  t.equal(children(), 2, 'one for the batch, one for the change that may be refused');
  const meta = store.records<string>(DB.meta);
  t.same(['b1', 'b2', 'own', 'b3'].map((key) => meta.get(key)), ['b1', 'b2', 'own', 'b3']);
  const plain = [change(store, 'p1', log), change(store, 'p2', log, { single: true })];
  for (const each of plain) group.submit(each);
  for (const each of plain) t.equal(await each.settled, undefined);
  t.equal(children(), 3, 'a batch with no bounded change opens no child of its own');
});

t.test('a change that becomes bounded during a batch without a bounded change keeps its own child transaction', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const { group, children } = counting(t, store);
  const log: string[] = [];
  let boundedNow = false;
  // As a delivery config written earlier in the batch can turn a later comment change bounded.
  const first = change(store, 'first', log, { onWrite: () => (boundedNow = true) });
  const later = change(store, 'later', log);
  Object.defineProperty(later, 'bounded', { get: () => boundedNow });
  group.submit(first);
  group.submit(later);
  t.equal(await first.settled, undefined);
  t.equal(await later.settled, undefined);
  t.equal(children(), 2, 'each its own: no batch child was opened to hold a bare write');
});

t.test('a bounded change that throws after all: nothing of its batch lands, each change is told, the next batch commits', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const { group } = counting(t, store);
  const log: string[] = [];
  const batch = [
    change(store, 'before', log),
    change(store, 'single', log, { single: true }),
    change(store, 'refused', log, { throws: true }),
    change(store, 'bad', log, { bounded: true, throws: true }),
    change(store, 'after', log, { bounded: true }),
  ];
  for (const each of batch) group.submit(each);
  t.match(await batch[2]?.settled, { message: 'refused refused' }, 'a change refused in its own child keeps its own error');
  for (const i of [0, 1, 3, 4]) t.match(await batch[i]?.settled, { message: 'bad refused' }, 'the others are told the bounded change\'s error');
  t.notOk(log.some((line) => line.startsWith('write after')), 'the change after it never ran');
  t.same(
    log.filter((line) => line.startsWith('settle')),
    ['settle refused failed', 'settle before failed', 'settle single failed', 'settle bad failed', 'settle after failed'],
    'the refused one at once, the rest in submission order',
  );
  const meta = store.records<string>(DB.meta);
  t.same(['before', 'single', 'refused', 'bad', 'after'].map((key) => meta.get(key)), [undefined, undefined, undefined, undefined, undefined], 'nothing landed');
  const next = change(store, 'next', log, { bounded: true });
  group.submit(next);
  t.equal(await next.settled, undefined);
  t.equal(meta.get('next'), 'next');
});

t.test('repeatable changes share one child transaction; one that throws still loses only its own writes', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const { group, children } = counting(t, store);
  const log: string[] = [];
  const together = ['a', 'b', 'c'].map((key) => change(store, key, log, { repeatable: true }));
  for (const each of together) group.submit(each);
  for (const each of together) t.equal(await each.settled, undefined);
  t.equal(children(), 1, 'three repeatable changes, one child transaction');

  log.length = 0;
  const d = change(store, 'd', log, { repeatable: true });
  const e = change(store, 'e', log, { repeatable: true, throws: true });
  const f = change(store, 'f', log, { repeatable: true });
  const plain = change(store, 'plain', log);
  for (const each of [d, e, f, plain]) group.submit(each);
  t.equal(await d.settled, undefined);
  t.match(await e.settled, { message: 'e refused' });
  t.equal(await f.settled, undefined);
  t.equal(await plain.settled, undefined);
  const meta = store.records<string>(DB.meta);
  t.same([meta.get('d'), meta.get('e'), meta.get('f'), meta.get('plain')], ['d', undefined, 'f', 'plain']);
  t.same(
    log.map((line) => line.replace(/ txn \d+/, '')),
    ['write d', 'write e', 'write d', 'write e', 'settle e failed', 'write f', 'write plain', 'settle d ok', 'settle f ok', 'settle plain ok'],
    'rolled back together, then each alone: the one that throws is told before later changes run',
  );
  t.equal(children(), 1 + 1 + 3 + 1, 'the shared child, then one each, then the plain change');
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

/** A store and a group commit on it whose deferrable changes alone wait `deferMs`; `log` records what ran. */
function deferring(t: Test, deferMs: number): { store: Store; log: string[]; group: GroupCommit } {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  return { store, log: [], group: new GroupCommit(rootOf(store), (error) => t.fail(String(error)), undefined, deferMs) };
}

/** Two full turns of the event loop: an undeferred batch would have been written by then. */
async function turns(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('a deferrable change alone waits for company; the next other change takes it along, in its place', async (t) => {
  // A window no test waits out: only another change or hurry() can start the transaction.
  const { store, log, group } = deferring(t, 60_000);
  const deferred = change(store, 'deferred', log, { deferrable: true });
  group.submit(deferred);
  await turns();
  t.same(log, [], 'nothing is written while only a deferrable change is queued');
  t.equal(group.pending, 1, 'it is pending');
  const urgent = change(store, 'urgent', log);
  group.submit(urgent);
  t.equal(await urgent.settled, undefined);
  t.equal(await deferred.settled, undefined);
  const writes = log.filter((line) => line.startsWith('write'));
  t.same(writes.map((line) => line.split(' txn ')[0]), ['write deferred', 'write urgent'], 'in submission order');
  t.equal(new Set(writes.map((line) => line.split(' txn ')[1])).size, 1, 'in one transaction');
  t.same(log.filter((line) => line.startsWith('settle')), ['settle deferred ok', 'settle urgent ok']);
});

t.test('hurry() commits deferred changes at the end of the turn; a short window commits them by itself', async (t) => {
  const { store, log, group: waiting } = deferring(t, 60_000);
  const hurried = change(store, 'hurried', log, { deferrable: true });
  waiting.submit(hurried);
  waiting.hurry();
  t.equal(await hurried.settled, undefined, 'hurried: committed without waiting the window');
  const short = new GroupCommit(rootOf(store), (error) => t.fail(String(error)), undefined, 1);
  const alone = change(store, 'alone', log, { deferrable: true });
  short.submit(alone);
  t.equal(await alone.settled, undefined, 'a window that ends starts the transaction');
  t.same(
    [store.records<string>(DB.meta).get('hurried'), store.records<string>(DB.meta).get('alone')],
    ['hurried', 'alone'],
    'both written',
  );
});

t.test('a deferrable change submitted during a commit waits for company after it, unless hurried', async (t) => {
  const { store, log, group } = deferring(t, 60_000);
  const later = change(store, 'later', log, { deferrable: true });
  const first = change(store, 'first', log, { onWrite: () => group.submit(later) });
  group.submit(first);
  t.equal(await first.settled, undefined);
  await turns();
  t.notOk(log.some((line) => line.startsWith('write later')), 'not written after the batch it arrived during');
  group.hurry();
  t.equal(await later.settled, undefined);
  t.equal(await group.settled().then(() => group.pending), 0, 'nothing left pending');
});

t.test('without a window (0, the default) a deferrable change commits at the end of its turn like any other', async (t) => {
  const { store, log, group } = deferring(t, 0);
  const deferrable = change(store, 'deferrable', log, { deferrable: true });
  group.submit(deferrable);
  t.equal(await deferrable.settled, undefined);
});
