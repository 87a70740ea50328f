// Tests folder deletes and bulk document operations over more documents than one write changes: bounded writes, every item answered, the same end state as one transaction.
import t, { type Test } from 'tap';
import type { Key } from 'lmdb';
import { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { Directory } from '../../src/tenant/directory.js';
import { ITEMS_PER_WRITE } from '../../src/tenant/directory/db.js';
import { countingTransactions } from '../helpers/store.js';

const KEY = 'key1';
const ORG = 'org1';

/** A directory on a real store, and every key of KEY's rows (JSON), in key order. */
function setup(t: Test): { store: Store; directory: Directory; keysOf: () => string[] } {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const directory = new Directory(store, { defaultAccessType: () => 'public' });
  const rows = store.records<unknown>(DB.directory);
  const keysOf = (): string[] => Array.from(rows.getKeys({ start: [KEY], end: [KEY, KEY_END] }) as Iterable<Key[]>, (key) => JSON.stringify(key));
  return { store, directory, keysOf };
}

t.test('a folder with more documents than one write removes them in bounded writes, keeps what is outside it', async (t) => {
  const { store, directory, keysOf } = setup(t);

  await directory.folders.add(KEY, ORG, [{ folderId: 'f1' }, { folderId: 'f2', parentFolderId: 'f1' }, { folderId: 'other' }]);
  const inF1 = Array.from({ length: ITEMS_PER_WRITE + 13 }, (_, i) => `a${String(i).padStart(4, '0')}`);
  const inF2 = Array.from({ length: ITEMS_PER_WRITE + 5 }, (_, i) => `b${String(i).padStart(4, '0')}`);
  await directory.documents.add(KEY, ORG, inF1.map((documentId) => ({ documentId })), { folderId: 'f1' });
  await directory.documents.add(KEY, ORG, inF2.map((documentId) => ({ documentId })), { folderId: 'f2' });
  await directory.documents.add(KEY, ORG, [{ documentId: 'kept' }], { folderId: 'other' });
  await directory.documents.add(KEY, ORG, [{ documentId: 'top' }]);
  const granted = [...inF1.slice(0, 3), ...inF2.slice(-3), 'kept'];
  await directory.permissions.add(KEY, { userId: 'u1' }, granted.map((id) => ({ type: 'document' as const, id, organizationId: ORG })));
  const subtree = [...inF1, ...inF2, 'f1', 'f2'];
  const mentions = (key: string): boolean => subtree.some((id) => key.includes(`"${id}"`));
  // Listing-order rows are keyed by sequence number, not id: the two documents outside keep theirs.
  const order = (id: string): string => JSON.stringify([KEY, 'doc-order', ORG, directory.documents.find(KEY, ORG, id)?.seq]);
  const outside = [...keysOf().filter((key) => !mentions(key) && !key.includes('"doc-order"')), order('kept'), order('top')].sort();

  const { result, transactions } = await countingTransactions(store, () => directory.folders.delete(KEY, ORG, 'f1'));
  t.same(result, { folders: 2, documents: inF1.length + inF2.length }, 'every document and both folders counted');
  const writes = Math.ceil((inF1.length + inF2.length) / ITEMS_PER_WRITE) + 1;
  t.ok(transactions >= writes, `bounded writes then the folders (${transactions} transactions, at least ${writes})`);
  t.same(keysOf().sort(), outside, 'nothing of the subtree is left, everything outside it is');
  t.ok(outside.some((key) => key.includes('"kept"') && key.includes('"grant"')), "the document outside keeps its grant");
  t.equal(directory.documents.find(KEY, ORG, inF1[0] as string), undefined);
});

t.test('a document moved out of the subtree after the scan is not removed by its batch', async (t) => {
  const { store, directory } = setup(t);
  await directory.folders.add(KEY, ORG, [{ folderId: 'f1' }, { folderId: 'safe' }]);
  const ids = Array.from({ length: ITEMS_PER_WRITE + 1 }, (_, i) => `d${String(i).padStart(4, '0')}`);
  await directory.documents.add(KEY, ORG, ids.map((documentId) => ({ documentId })), { folderId: 'f1' });
  const last = ids[ids.length - 1] as string;
  // The first batch's commit is the moment the delete has scanned but not reached the last document: move it then.
  let moved = false;
  const transaction = store.transaction.bind(store);
  store.transaction = (async (body) => {
    const answer = await transaction(body);
    if (!moved) {
      moved = true;
      await directory.documents.move(KEY, ORG, [last], 'safe');
    }
    return answer;
  }) as typeof store.transaction;
  t.teardown(() => {
    store.transaction = transaction;
  });
  const result = await directory.folders.delete(KEY, ORG, 'f1');
  t.ok(moved, 'the move ran between two writes of the delete');
  t.same(result, { folders: 1, documents: ids.length - 1 }, 'the moved document is not counted');
  t.equal(directory.documents.find(KEY, ORG, last)?.folderId, 'safe', 'the moved document is still there, in its new folder');
});

t.test('a bulk move and a bulk delete of more documents than one write go in bounded writes, every item answered', async (t) => {
  const { store, directory, keysOf } = setup(t);
  await directory.folders.add(KEY, ORG, [{ folderId: 'from' }, { folderId: 'to' }]);
  const ids = Array.from({ length: ITEMS_PER_WRITE + 7 }, (_, i) => `d${String(i).padStart(4, '0')}`);
  await directory.documents.add(KEY, ORG, [...ids, 'untouched'].map((documentId) => ({ documentId })), { folderId: 'from' });
  await directory.permissions.add(KEY, { userId: 'u1' }, ids.slice(0, 3).map((id) => ({ type: 'document' as const, id, organizationId: ORG })));
  const writes = Math.ceil(ids.length / ITEMS_PER_WRITE);

  const moved = await countingTransactions(store, () => directory.documents.move(KEY, ORG, [...ids, 'missing'], 'to'));
  t.ok(moved.transactions >= writes, `the move in bounded writes (${moved.transactions} transactions, at least ${writes})`);
  t.same(Object.keys(moved.result).sort(), [...ids, 'missing'].sort(), 'one answer per id');
  t.same(ids.filter((id) => moved.result[id]?.success !== true), [], 'every document moved');
  t.equal(moved.result['missing']?.success, false, 'an unknown id answers its failure');
  t.same(ids.filter((id) => directory.documents.find(KEY, ORG, id)?.folderId !== 'to'), [], 'all of them are in the new folder');
  t.equal(directory.documents.find(KEY, ORG, 'untouched')?.folderId, 'from');

  const deleted = await countingTransactions(store, () => directory.documents.delete(KEY, ORG, ids));
  t.ok(deleted.transactions >= writes, `the delete in bounded writes (${deleted.transactions} transactions, at least ${writes})`);
  t.same(ids.filter((id) => deleted.result[id]?.success !== true), [], 'every document deleted');
  t.same(ids.filter((id) => directory.documents.find(KEY, ORG, id) !== undefined), [], 'none is left');
  t.same(keysOf().filter((key) => ids.some((id) => key.includes(`"${id}"`))), [], 'no row names them: their grants went with them');
  t.equal(directory.documents.find(KEY, ORG, 'untouched')?.folderId, 'from', 'a document not named stays');
});
