// Tests src/doc/document-writes.ts: memory first, commits in order, and a failed commit undoes it and every later change.
import t from 'tap';
import { DocumentWrites, type DocumentChange } from '../../src/doc/document-writes.js';
import { Store } from '../../src/store/env.js';
import { GroupCommit, type TransactionRoot } from '../../src/store/group-commit.js';
import { DB } from '../../src/store/keys.js';
import { openStore, rootOf } from '../helpers/store.js';

/** A document whose memory is one map; each change sets one key there and in LMDB. */
class Doc {
  readonly memory = new Map<string, string>();
  readonly log: string[] = [];
  constructor(readonly store: Store, readonly writes = new DocumentWrites(store)) {}

  set(key: string, value: string, options: { throws?: boolean; bounded?: boolean } = {}): Promise<DocumentChange> {
    const before = this.memory.get(key);
    this.memory.set(key, value);
    const { memory, log } = this;
    const db = this.store.records<string>(DB.meta);
    return this.writes.submit({
      bounded: options.bounded === true,
      write: () => {
        db.putSync(key, value);
        if (options.throws === true) throw new Error(`${key}=${value} refused`);
      },
      undo: () => {
        log.push(`undo ${key}=${value}`);
        if (before === undefined) memory.delete(key);
        else memory.set(key, before);
      },
      committed: () => log.push(`committed ${key}=${value}`),
    });
  }
}

t.test('memory changes at once; the change resolves after its commit, and commits are told in order', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const doc = new Doc(store);
  const first = doc.set('a', '1');
  const second = doc.set('a', '2');
  t.equal(doc.memory.get('a'), '2', 'the next operation sees both before any commit');
  t.equal(doc.writes.pending, 2);
  let seen: boolean | undefined;
  doc.writes.afterPending((ok) => (seen = ok));
  t.equal(seen, undefined, 'a reader waits for what it saw to commit');
  await Promise.all([first, second]);
  t.equal(seen, true);
  t.same(doc.log, ['committed a=1', 'committed a=2']);
  t.equal(store.records<string>(DB.meta).get('a'), '2');
  doc.writes.afterPending((ok) => (seen = !ok));
  t.equal(seen, false, 'with nothing pending a reader goes on at once');
});

t.test('a change that fails takes every later change of the document with it; memory is undone newest first', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const doc = new Doc(store);
  const other = new Doc(store);
  const kept = doc.set('a', 'kept');
  const failed = doc.set('b', 'bad', { throws: true });
  const after = doc.set('a', 'built on bad');
  const unrelated = other.set('c', 'fine');
  let seen: boolean | undefined;
  doc.writes.afterPending((ok) => (seen = ok));
  const [k, f, a, u] = await Promise.allSettled([kept, failed, after, unrelated]);
  t.equal(k.status, 'fulfilled');
  t.match(f, { status: 'rejected', reason: { message: 'b=bad refused' } });
  t.match(a, { status: 'rejected', reason: { status: 'ABORTED' } }, 'a later change made on top of the failed one fails too');
  t.equal(u.status, 'fulfilled', 'another document is not affected');
  t.equal(seen, false);
  t.same(doc.log, ['undo a=built on bad', 'undo b=bad', 'committed a=kept']);
  t.same([...doc.memory], [['a', 'kept']], 'memory equals what is committed');
  const meta = store.records<string>(DB.meta);
  t.same([meta.get('a'), meta.get('b'), meta.get('c')], ['kept', undefined, 'fine'], 'neither failed change landed; the other document did');
  await doc.set('b', 'later');
  t.equal(meta.get('b'), 'later', 'changes made after the failure commit normally');
});

t.test('a bounded change made on top of a failed one fails alone: its refusal does not take the batch with it', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const doc = new Doc(store);
  const other = new Doc(store);
  const failed = doc.set('b', 'bad', { throws: true });
  // Bounded, but made on top of the failed change: its write refuses to run, and that refusal must stay its own.
  const after = doc.set('a', 'built on bad', { bounded: true });
  const unrelated = other.set('c', 'fine', { bounded: true });
  const [f, a, u] = await Promise.allSettled([failed, after, unrelated]);
  t.match(f, { status: 'rejected', reason: { message: 'b=bad refused' } });
  t.match(a, { status: 'rejected', reason: { status: 'ABORTED' } });
  t.equal(u.status, 'fulfilled', "another document's bounded change in the same batch commits");
  const meta = store.records<string>(DB.meta);
  t.same([meta.get('a'), meta.get('b'), meta.get('c')], [undefined, undefined, 'fine']);
});

t.test('a commit that fails after later changes were submitted fails them too, even in the next batch', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  let failNext = true;
  const root: TransactionRoot = {
    transaction: (body) => {
      const result = rootOf(store).transaction(body);
      if (!failNext) return result;
      failNext = false;
      return result.then(() => Promise.reject(new Error('commit failed: I/O error')));
    },
    childTransaction: (body) => rootOf(store).childTransaction(body),
  };
  // The same store with a group commit whose first commit fails.
  const failing = Object.create(store, { group: { value: new GroupCommit(root, (error) => t.fail(String(error))) } }) as Store;
  const doc = new Doc(failing);
  const first = doc.set('x', '1');
  // Made once the first batch is being written: it waits for the next batch.
  let second: Promise<DocumentChange> | undefined;
  const started = new Promise<void>((resolve) => {
    const original = root.transaction;
    root.transaction = (body) =>
      original(() => {
        const result = body();
        second ??= doc.set('x', '2');
        resolve();
        return result;
      });
  });
  await started;
  await t.rejects(first, { message: 'commit failed: I/O error' });
  t.match(await Promise.allSettled([second]), [{ status: 'rejected', reason: { status: 'ABORTED' } }]);
  t.same(doc.log, ['undo x=2', 'undo x=1']);
  t.equal(doc.memory.get('x'), undefined);
});

t.test('a reader waiting for a deferrable change hurries it: it is not kept for the deferral window', async (t) => {
  // A window no test waits out: the change commits only because a reader waits for it.
  const store = Store.open(t.testdir(), { deferMs: 60_000 });
  t.teardown(() => store.close());
  const writes = new DocumentWrites(store);
  const db = store.records<string>(DB.meta);
  const change = writes.submit({ deferrable: true, write: () => db.putSync('presence', 'online'), undo: () => t.fail('nothing fails here') });
  await new Promise<void>((resolve) => setImmediate(resolve));
  t.equal(db.get('presence'), undefined, 'deferred: not written at the end of its turn');
  const seen = await new Promise<boolean>((resolve) => writes.afterPending(resolve));
  t.equal(seen, true, 'the reader is told it committed');
  await change;
  t.equal(db.get('presence'), 'online');
});
