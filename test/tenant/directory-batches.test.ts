// Tests folder deletes and bulk directory operations (documents, users, groups, permissions) over more items than one write changes: bounded writes, every item answered, the same end state as one transaction.
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
/**
 * Runs `meddle` once, right after the next transaction of `store` commits: between two bounded writes of the call under
 * test. Answers the function that puts the store's own transaction back.
 */
function afterFirstWrite(store: Store, meddle: () => Promise<unknown>): () => void {
  const transaction = store.transaction.bind(store);
  let done = false;
  store.transaction = (async (body) => {
    const answer = await transaction(body);
    if (!done) {
      done = true;
      await meddle();
    }
    return answer;
  }) as typeof store.transaction;
  return () => {
    store.transaction = transaction;
  };
}

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
  const restore = afterFirstWrite(store, async () => {
    moved = true;
    await directory.documents.move(KEY, ORG, [last], 'safe');
  });
  t.teardown(restore);
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

/** `count` ids in key order, more than one write holds. */
function manyIds(prefix: string, count = ITEMS_PER_WRITE + 7): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);
}

/** The writes a call of `count` items takes at least: one per ITEMS_PER_WRITE. */
function writesFor(count: number): number {
  return Math.ceil(count / ITEMS_PER_WRITE);
}

/** The ids whose answer is not a success. */
function failed(result: Record<string, { success: boolean }>, ids: readonly string[]): string[] {
  return ids.filter((id) => result[id]?.success !== true);
}

t.test('documents/add of more documents than one write goes in bounded writes, every document answered and stored', async (t) => {
  const { store, directory } = setup(t);
  const ids = manyIds('d');
  await directory.documents.add(KEY, ORG, [{ documentId: 'exists' }]);
  const added = await countingTransactions(store, () => directory.documents.add(KEY, ORG, [...ids, 'exists'].map((documentId) => ({ documentId })), { folderId: 'new', createFolder: true }));
  t.ok(added.transactions >= writesFor(ids.length + 1), `bounded writes (${added.transactions} transactions)`);
  t.same(failed(added.result, ids), [], 'every new document added');
  t.equal(added.result['exists']?.code, 'already-exists', 'an existing one answers its failure');
  t.same(ids.filter((id) => directory.documents.find(KEY, ORG, id)?.folderId !== 'new'), [], 'all stored, in the folder created for them');
  const listed = directory.documents.get(KEY, ORG, { folderId: 'new', pageSize: 1000 }).rows.map((row) => row.id);
  t.same(listed, ids, 'listed in request order: each write continues the listing order');
});

t.test('users add, update and delete at a document for more users than one write go in bounded writes, every user answered', async (t) => {
  const { store, directory, keysOf } = setup(t);
  const ids = manyIds('u');
  const scope = { organizationId: ORG, documentId: 'doc' };
  const users = async (): Promise<Array<{ userId: string; accessRole: string }>> =>
    (await directory.users.get(KEY, scope, { userIds: ids, pageSize: 1000 })).rows.map((row) => ({ userId: row.userId, accessRole: row.accessRole }));

  const added = await countingTransactions(store, () => directory.users.add(KEY, scope, ids.map((userId) => ({ userId, name: `name ${userId}` }))));
  t.ok(added.transactions >= writesFor(ids.length), `add in bounded writes (${added.transactions} transactions)`);
  t.same(failed(added.result, ids), [], 'every user added');
  t.ok(directory.documents.find(KEY, ORG, 'doc') !== undefined, 'the document is registered');
  t.same(await users(), ids.map((userId) => ({ userId, accessRole: 'editor' })), 'each holds the default role on the document');

  const updated = await countingTransactions(store, () => directory.users.update(KEY, scope, [...ids, 'nobody'].map((userId) => ({ userId, accessRole: 'viewer' as const, name: `renamed ${userId}` }))));
  t.ok(updated.transactions >= writesFor(ids.length + 1), `update in bounded writes (${updated.transactions} transactions)`);
  t.same(failed(updated.result, ids), [], 'every user updated');
  t.equal(updated.result['nobody']?.code, 'not-found', 'an unknown user answers its failure');
  t.same(await users(), ids.map((userId) => ({ userId, accessRole: 'viewer' })), 'each has the new role');
  t.same(ids.filter((id) => directory.users.profile(KEY, ORG, id)?.profile['name'] !== `renamed ${id}`), [], 'and the new profile');

  const deleted = await countingTransactions(store, () => directory.users.delete(KEY, scope, [...ids, 'nobody']));
  t.ok(deleted.transactions >= writesFor(ids.length + 1), `delete in bounded writes (${deleted.transactions} transactions)`);
  t.same(failed(deleted.result, ids), [], 'every user removed');
  t.equal(deleted.result['nobody']?.code, 'not-found');
  t.same(await users(), [], 'none holds a grant on the document');
  t.same(keysOf().filter((key) => key.includes('"grant"') || key.includes('"principal-grant"')), [], 'no grant row is left');
  t.same(ids.filter((id) => directory.users.profile(KEY, ORG, id) === undefined), [], 'the profiles stay: they belong to the organization');
});

t.test('user groups: add, add members and delete members over more than one write, and deleteAll of a large group', async (t) => {
  const { store, directory, keysOf } = setup(t);
  const groupIds = manyIds('g');
  const groups = await countingTransactions(store, () => directory.groups.add(KEY, ORG, groupIds.map((groupId) => ({ groupId }))));
  t.ok(groups.transactions >= writesFor(groupIds.length), `groups added in bounded writes (${groups.transactions} transactions)`);
  t.same(failed(groups.result, groupIds), [], 'every group added');
  t.same(groupIds.filter((id) => directory.groups.find(KEY, ORG, id) === undefined), [], 'and stored');

  const ids = manyIds('u');
  const members = await countingTransactions(store, () => directory.groups.addUsers(KEY, ORG, 'g0000', ids));
  t.ok(members.transactions >= writesFor(ids.length), `members added in bounded writes (${members.transactions} transactions)`);
  t.same(failed(members.result, ids), [], 'every member added');
  t.same(ids.filter((id) => directory.groups.groupsOf(KEY, ORG, id).join() !== 'g0000'), [], 'both rows of each membership written');

  const removed = await countingTransactions(store, () => directory.groups.deleteUsers(KEY, ORG, 'g0000', { userIds: [...ids, 'stranger'], deleteAll: false }));
  t.ok(removed.transactions >= writesFor(ids.length + 1), `members removed in bounded writes (${removed.transactions} transactions)`);
  t.same(failed(removed.result, ids), [], 'every member removed');
  t.equal(removed.result['stranger']?.code, 'not-found', 'a user not in the group answers its failure');
  t.same(ids.filter((id) => directory.groups.isMember(KEY, ORG, 'g0000', id) || directory.groups.groupsOf(KEY, ORG, id).length > 0), [], 'no membership row is left');

  const everyone = manyIds('m', ITEMS_PER_WRITE * 2 + 3);
  await directory.groups.addUsers(KEY, ORG, 'g0001', everyone);
  await directory.groups.addUsers(KEY, ORG, 'g0002', ['m0000']);
  const all = await countingTransactions(store, () => directory.groups.deleteUsers(KEY, ORG, 'g0001', { deleteAll: true }));
  t.ok(all.transactions >= writesFor(everyone.length), `deleteAll in bounded writes (${all.transactions} transactions)`);
  t.same(Object.keys(all.result).sort(), everyone, 'every member answered');
  t.same(failed(all.result, everyone), [], 'every member removed');
  t.same(keysOf().filter((key) => key.includes('"g0001"') && !key.includes('"group"')), [], 'no membership row of the group is left');
  t.ok(directory.groups.isMember(KEY, ORG, 'g0002', 'm0000'), "another group's member stays");
});

t.test('permissions add and remove over more resources than one write go in bounded writes, every resource answered', async (t) => {
  const { store, directory, keysOf } = setup(t);
  const ids = manyIds('d');
  const resources = ids.map((id) => ({ type: 'document' as const, id, organizationId: ORG, accessRole: 'viewer' as const }));
  const keyOf = (id: string): string => `document:${ORG}:${id}`;
  const missingFolder = { type: 'folder' as const, id: 'nofolder', organizationId: ORG };

  const added = await countingTransactions(store, () => directory.permissions.add(KEY, { userId: 'u1' }, [...resources, missingFolder]));
  t.ok(added.transactions >= writesFor(ids.length + 1), `add in bounded writes (${added.transactions} transactions)`);
  t.same(failed(added.result, ids.map(keyOf)), [], 'every grant added');
  t.equal(added.result[`folder:${ORG}:nofolder`]?.code, 'not-found', 'a missing folder answers its failure');
  t.same(ids.filter((id) => directory.documents.find(KEY, ORG, id) === undefined), [], 'every document registered');
  const report = directory.permissions.get(KEY, ORG, ['u1'], { documentIds: ids })['u1']?.documents ?? {};
  t.same(ids.filter((id) => report[id]?.accessRole !== 'viewer'), [], 'each grants its role');

  const removed = await countingTransactions(store, () => directory.permissions.remove(KEY, { userId: 'u1' }, [...resources, { type: 'document' as const, id: 'never', organizationId: ORG }]));
  t.ok(removed.transactions >= writesFor(ids.length + 1), `remove in bounded writes (${removed.transactions} transactions)`);
  t.same(failed(removed.result, ids.map(keyOf)), [], 'every grant removed');
  t.equal(removed.result[keyOf('never')]?.code, 'not-found', 'a grant never made answers its failure');
  t.same(keysOf().filter((key) => key.includes('"grant"') || key.includes('"principal-grant"')), [], 'no grant row is left');
});

t.test('folders and organizations: add, update and access or disable state over more items than one write, every item answered', async (t) => {
  const { store, directory } = setup(t);
  const ids = manyIds('f');
  // Each folder under the one before: a parent added by an earlier write of the same call is found.
  const chain = ids.map((folderId, i) => (i === 0 ? { folderId } : { folderId, parentFolderId: ids[i - 1] as string }));
  const added = await countingTransactions(store, () => directory.folders.add(KEY, ORG, chain));
  t.ok(added.transactions >= writesFor(ids.length), `folders added in bounded writes (${added.transactions} transactions)`);
  t.same(failed(added.result, ids), [], 'every folder added');
  t.same(directory.folders.find(KEY, ORG, ids.at(-1) as string)?.ancestors, ['root', ...ids.slice(0, -1)], 'the last one under all the others');

  const renamed = await countingTransactions(store, () => directory.folders.update(KEY, ORG, [...ids, 'nofolder'].map((folderId) => ({ folderId, folderName: `n ${folderId}` }))));
  t.ok(renamed.transactions >= writesFor(ids.length + 1), `folders updated in bounded writes (${renamed.transactions} transactions)`);
  t.same(failed(renamed.result, ids), [], 'every folder updated');
  t.equal(renamed.result['nofolder']?.code, 'not-found');
  t.same(ids.filter((id) => directory.folders.find(KEY, ORG, id)?.folderName !== `n ${id}`), [], 'each renamed');

  const access = await countingTransactions(store, () => directory.folders.setAccess(KEY, ORG, ids, { accessType: 'restricted', inherit: false }));
  t.ok(access.transactions >= writesFor(ids.length), `access types set in bounded writes (${access.transactions} transactions)`);
  t.same(ids.filter((id) => access.result[id]?.['accessType'] !== 'restricted'), [], 'every folder answers its new access type');
  t.same(ids.filter((id) => directory.folders.find(KEY, ORG, id)?.accessType !== 'restricted'), [], 'and stores it');

  const orgs = manyIds('o');
  const made = await countingTransactions(store, () => directory.organizations.add(KEY, [...orgs, ORG].map((organizationId) => ({ organizationId }))));
  t.ok(made.transactions >= writesFor(orgs.length + 1), `organizations added in bounded writes (${made.transactions} transactions)`);
  t.same(failed(made.result, orgs), [], 'every organization added');
  t.equal(made.result[ORG]?.code, 'already-exists', 'an existing one answers its failure');
  const updated = await countingTransactions(store, () => directory.organizations.update(KEY, orgs.map((organizationId) => ({ organizationId, organizationName: `n ${organizationId}` }))));
  t.ok(updated.transactions >= writesFor(orgs.length), `organizations updated in bounded writes (${updated.transactions} transactions)`);
  t.same(orgs.filter((id) => directory.organizations.find(KEY, id)?.organizationName !== `n ${id}`), [], 'each renamed');
  const disabled = await countingTransactions(store, () => directory.organizations.setDisabled(KEY, orgs, true));
  t.ok(disabled.transactions >= writesFor(orgs.length), `organizations disabled in bounded writes (${disabled.transactions} transactions)`);
  t.same(failed(disabled.result, orgs), [], 'every organization answered');
  t.same(orgs.filter((id) => directory.organizations.find(KEY, id)?.disabled !== true), [], 'each disabled');
});

t.test('a folder with more subfolders than one write removes them deepest first in bounded writes, each checked in its write', async (t) => {
  const { store, directory, keysOf } = setup(t);
  const wide = manyIds('s', ITEMS_PER_WRITE * 2 + 3);
  await directory.folders.add(KEY, ORG, [{ folderId: 'top' }, { folderId: 'other' }, ...wide.map((folderId) => ({ folderId, parentFolderId: 'top' }))]);
  await directory.folders.add(KEY, ORG, [{ folderId: 'deep', parentFolderId: 's0000' }]);
  await directory.documents.add(KEY, ORG, [{ documentId: 'in-deep' }], { folderId: 'deep' });
  await directory.permissions.add(KEY, { userId: 'u1' }, ['s0000', 'deep', 'other'].map((id) => ({ type: 'folder' as const, id, organizationId: ORG })));
  const [first, moved] = wide as [string, string];
  // After the delete's first write (its document's; the subfolders follow, deepest first, so `first` and `moved`
  // last): a folder added under one not yet removed, and one not yet removed moved out of the subtree (two writes).
  let meddled = false;
  const restore = afterFirstWrite(store, async () => {
    meddled = true;
    await directory.folders.add(KEY, ORG, [{ folderId: 'late', parentFolderId: first }]);
    await directory.folders.update(KEY, ORG, [{ folderId: moved, parentFolderId: 'other' }]);
  });
  const { result, transactions } = await countingTransactions(store, () => directory.folders.delete(KEY, ORG, 'top'));
  restore();
  t.ok(meddled, 'the add and the move ran between two writes of the delete');
  const writes = 1 + writesFor(wide.length + 1) + 1 + 2;
  t.ok(transactions >= writes, `the document, the subfolders in bounded writes, the folder itself, the two between (${transactions} transactions, at least ${writes})`);
  // `top`, `deep`, the scanned subfolders but the moved one, and the late one.
  t.same(result, { folders: 1 + 1 + wide.length - 1 + 1, documents: 1 }, 'every folder and document counted, the moved folder not');
  const gone = ['top', 'deep', 'late', 'in-deep', ...wide.filter((id) => id !== moved)];
  t.same(keysOf().filter((key) => gone.some((id) => key.includes(`"${id}"`))), [], 'no row of the subtree is left, nor of its grants');
  t.same(directory.folders.find(KEY, ORG, moved)?.ancestors, ['root', 'other'], 'the moved folder stays where it went');
  t.ok(keysOf().some((key) => key.includes('"grant"') && key.includes('"other"')), 'a grant outside the subtree stays');
});

t.test('the grants on deleted documents and folders leave in bounded writes before them, however many one holds', async (t) => {
  const { store, directory, keysOf } = setup(t);
  const users = manyIds('u', ITEMS_PER_WRITE * 2 + 5);
  await directory.folders.add(KEY, ORG, [{ folderId: 'f' }]);
  await directory.documents.add(KEY, ORG, [{ documentId: 'shared' }, { documentId: 'plain' }, { documentId: 'kept' }]);
  await directory.documents.add(KEY, ORG, [{ documentId: 'inside' }], { folderId: 'f' });
  for (const scope of [{ documentId: 'shared' }, { documentId: 'kept' }, { folderId: 'f' }, { documentId: 'inside' }]) {
    await directory.users.add(KEY, { organizationId: ORG, ...scope }, users.map((userId) => ({ userId })));
  }
  await directory.permissions.add(KEY, { userId: 'u1' }, [{ type: 'document' as const, id: 'plain', organizationId: ORG }]);
  const grantRows = (id: string): string[] => keysOf().filter((key) => (key.includes('"grant"') || key.includes('"principal-grant"')) && key.includes(`"${id}"`));

  const deleted = await countingTransactions(store, () => directory.documents.delete(KEY, ORG, ['shared', 'plain']));
  const writes = writesFor(users.length + 1) + 1;
  t.ok(deleted.transactions >= writes, `the grants in bounded writes, then the documents (${deleted.transactions} transactions, at least ${writes})`);
  t.same(failed(deleted.result, ['shared', 'plain']), [], 'both deleted');
  t.same([...grantRows('shared'), ...grantRows('plain')], [], 'no grant on them is left');
  t.equal(grantRows('kept').length, users.length * 2, 'a document not named keeps its grants');

  const folder = await countingTransactions(store, () => directory.folders.delete(KEY, ORG, 'f'));
  const folderWrites = writesFor(users.length * 2) + 2;
  t.ok(folder.transactions >= folderWrites, `the folder's and its document's grants in bounded writes (${folder.transactions} transactions, at least ${folderWrites})`);
  t.same(folder.result, { folders: 1, documents: 1 });
  t.same([...grantRows('f'), ...grantRows('inside')], [], 'no grant on the folder or its document is left');
  t.equal(grantRows('kept').length, users.length * 2, 'nor is one outside it touched');
});
