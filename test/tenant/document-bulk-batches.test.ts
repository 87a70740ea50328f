// Tests bulk document operations over more documents than one write changes: bounded writes, one answer per item, the same end state.
import t from 'tap';
import type { Key } from 'lmdb';
import { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { Directory } from '../../src/tenant/directory.js';
import { DOCUMENTS_PER_WRITE } from '../../src/tenant/directory/document-entries.js';
import { countingTransactions } from '../helpers/store.js';

const KEY = 'key1';
const ORG = 'org1';

t.test('a bulk move and a bulk delete of more documents than one write go in bounded writes, every item answered', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const directory = new Directory(store, { defaultAccessType: () => 'public' });
  await directory.folders.add(KEY, ORG, [{ folderId: 'from' }, { folderId: 'to' }]);
  const ids = Array.from({ length: DOCUMENTS_PER_WRITE + 7 }, (_, i) => `d${String(i).padStart(4, '0')}`);
  await directory.documents.add(KEY, ORG, [...ids, 'untouched'].map((documentId) => ({ documentId })), { folderId: 'from' });
  await directory.permissions.add(KEY, { userId: 'u1' }, ids.slice(0, 3).map((id) => ({ type: 'document' as const, id, organizationId: ORG })));
  const writes = Math.ceil(ids.length / DOCUMENTS_PER_WRITE);

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
  const rows = store.records<unknown>(DB.directory);
  const left = Array.from(rows.getKeys({ start: [KEY], end: [KEY, KEY_END] }) as Iterable<Key[]>, (key) => JSON.stringify(key));
  t.same(left.filter((key) => ids.some((id) => key.includes(`"${id}"`))), [], 'no row names them: their grants went with them');
  t.equal(directory.documents.find(KEY, ORG, 'untouched')?.folderId, 'from', 'a document not named stays');
});
