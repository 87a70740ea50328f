// Tests users/delete at organization level for users with more grants than one write, and for many users with a few: bounded writes, broadest access first, the profile last, the same end state and answer as one transaction.
import t, { type Test } from 'tap';
import type { Key } from 'lmdb';
import { WRITE_BATCH } from '../../src/store/chunked-scan.js';
import { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { Directory } from '../../src/tenant/directory.js';
import { ITEMS_PER_WRITE } from '../../src/tenant/directory/db.js';
import { countingTransactions } from '../helpers/store.js';

const KEY = 'key1';
const ORG = 'org1';
const NOW = Date.UTC(2030, 0, 1);

function setup(t: Test) {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const directory = new Directory(store, { defaultAccessType: () => 'public', now: () => NOW });
  const rows = store.records<unknown>(DB.directory);
  const keysOf = (organizationId: string): string[] =>
    Array.from(rows.getKeys({ start: [KEY], end: [KEY, KEY_END] }) as Iterable<Key[]>)
      .filter((key) => key[2] === organizationId)
      .map((key) => JSON.stringify(key));
  return { directory, keysOf };
}

/** The rows a user's removal from the organization takes: profile, memberships both ways, grants both ways. */
function belongsTo(userId: string, encoded: string): boolean {
  const key = JSON.parse(encoded) as string[];
  const kind = key[1];
  return (
    (kind === 'user' && key[3] === userId) ||
    (kind === 'member' && key[4] === userId) ||
    (kind === 'user-group' && key[3] === userId) ||
    (kind === 'grant' && key[5] === 'user' && key[6] === userId) ||
    (kind === 'principal-grant' && key[3] === 'user' && key[4] === userId)
  );
}

t.test('deleting users at the organization removes exactly their rows, in bounded writes, broadest access first', async (t) => {
  const { directory, keysOf } = setup(t);
  const documents = Array.from({ length: WRITE_BATCH * 2 + 37 }, (_, i) => `d${String(i).padStart(5, '0')}`);
  await directory.folders.add(KEY, ORG, [{ folderId: 'f1' }, { folderId: 'f2' }]);
  await directory.users.add(KEY, { organizationId: ORG }, [{ userId: 'big', name: 'Big' }, { userId: 'keep', name: 'Keep' }]);
  for (const userId of ['big', 'keep']) {
    await directory.permissions.add(KEY, { userId }, documents.map((id) => ({ type: 'document' as const, id, organizationId: ORG })));
    await directory.permissions.add(KEY, { userId }, [{ type: 'folder', id: 'f1', organizationId: ORG }, { type: 'folder', id: 'f2', organizationId: ORG, expiresAt: NOW - 1 }]);
  }
  await directory.permissions.add(KEY, { userId: 'small' }, [{ type: 'document', id: 'd00001', organizationId: ORG }]);
  await directory.groups.add(KEY, ORG, [{ groupId: 'g1' }, { groupId: 'g2' }, { groupId: 'g3' }]);
  for (const groupId of ['g1', 'g2', 'g3']) await directory.groups.addUsers(KEY, ORG, groupId, ['big', 'keep']);
  await directory.groups.addUsers(KEY, ORG, 'g2', ['grouped']);
  await directory.users.add(KEY, { organizationId: 'org2', documentId: 'd00001' }, [{ userId: 'big', name: 'Elsewhere' }]);
  const before = keysOf(ORG);
  const elsewhere = keysOf('org2');

  // Told after each committed directory write: what a reader of big saw between the writes.
  const seen: Array<{ profile: boolean; organization: boolean; groups: number; folders: number; documents: number }> = [];
  let ranBetween: number | undefined;
  directory.onChange(() => {
    const left = keysOf(ORG);
    const held = (level: string) => left.filter((key) => key.startsWith(JSON.stringify([KEY, 'principal-grant', ORG, 'user', 'big', level]).slice(0, -1))).length;
    seen.push({
      profile: directory.users.profile(KEY, ORG, 'big') !== undefined,
      organization: held('organization') > 0,
      groups: directory.groups.groupsOf(KEY, ORG, 'big').length,
      folders: held('folder'),
      documents: held('document'),
    });
    if (ranBetween === undefined) setImmediate(() => (ranBetween = seen.length));
  });

  const answer = await directory.users.delete(KEY, { organizationId: ORG }, ['big', 'small', 'grouped', 'nobody']);
  t.same(answer, {
    big: { success: true, id: 'big', message: 'User removed.' },
    small: { success: true, id: 'small', message: 'User removed.' },
    grouped: { success: true, id: 'grouped', message: 'User removed.' },
    nobody: { success: false, id: 'nobody', message: 'User does not exist.', code: 'not-found' },
  }, 'the same per-user answer as before');
  const gone = (key: string) => ['big', 'small', 'grouped'].some((userId) => belongsTo(userId, key));
  t.same(keysOf(ORG), before.filter((key) => !gone(key)), 'exactly their profile, memberships and grants went; keep’s and the rest stay');
  t.same(keysOf('org2'), elsewhere, 'another organization keeps the same user');

  const big = seen.slice(0, seen.findIndex((s) => !s.profile) + 1);
  t.ok(big.length > 2, `big went in ${big.length} writes`);
  t.match(big[0], { profile: true, organization: false, groups: 0, folders: 0 }, 'the first write took the organization grant, the groups and the folder grants');
  t.ok((big[0]?.documents ?? 0) > 0, 'while document grants were still there');
  t.ok(big.slice(0, -1).every((s) => s.profile), 'the profile stayed until the last write');
  t.match(big.at(-1), { profile: false, documents: 0 }, 'after it, nothing of big');
  t.ok(ranBetween !== undefined && ranBetween < big.length, 'a callback queued after the first write ran before the last one');
  t.equal(seen.length, big.length, "small and grouped went in big's last write: users with a few rows share one");
});

t.test('at a document or folder, users/delete removes that grant only, all in one write', async (t) => {
  const { directory, keysOf } = setup(t);
  await directory.users.add(KEY, { organizationId: ORG }, [{ userId: 'ann' }]);
  await directory.users.add(KEY, { organizationId: ORG, documentId: 'doc' }, [{ userId: 'ann' }, { userId: 'bob' }]);
  const before = keysOf(ORG);
  let writes = 0;
  directory.onChange(() => writes++);
  const answer = await directory.users.delete(KEY, { organizationId: ORG, documentId: 'doc' }, ['ann', 'bob', 'nobody']);
  t.same(Object.fromEntries(Object.entries(answer).map(([id, r]) => [id, r.success])), { ann: true, bob: true, nobody: false });
  t.equal(writes, 1);
  const removed = before.filter((key) => !keysOf(ORG).includes(key)).map((key) => (JSON.parse(key) as string[]).slice(1, 7).join('/'));
  t.same(removed.sort(), ['grant/org1/document/doc/user/ann', 'grant/org1/document/doc/user/bob', 'principal-grant/org1/user/ann/document/doc', 'principal-grant/org1/user/bob/document/doc'].sort());
});

t.test('many users with a few rows each leave the organization in a few bounded writes, not one write each', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const directory = new Directory(store, { defaultAccessType: () => 'public', now: () => NOW });
  const users = Array.from({ length: ITEMS_PER_WRITE + 7 }, (_, i) => `u${String(i).padStart(4, '0')}`);
  await directory.groups.add(KEY, ORG, [{ groupId: 'g1' }]);
  await directory.users.add(KEY, { organizationId: ORG }, [...users, 'keep'].map((userId) => ({ userId, name: userId })));
  await directory.users.add(KEY, { organizationId: ORG, documentId: 'd1' }, users.map((userId) => ({ userId })));
  await directory.groups.addUsers(KEY, ORG, 'g1', [...users, 'keep']);
  const { result, transactions } = await countingTransactions(store, () => directory.users.delete(KEY, { organizationId: ORG }, users));
  // Three removals a user (group, two grants) and the profile: about ITEMS_PER_WRITE of them to a write.
  const most = Math.ceil((users.length * 4) / ITEMS_PER_WRITE) + 1;
  t.ok(transactions > 1 && transactions <= most, `${transactions} writes for ${users.length} users (at most ${most})`);
  t.same(users.filter((id) => result[id]?.success !== true), [], 'every user answered as removed');
  t.same(users.filter((id) => directory.users.profile(KEY, ORG, id) !== undefined || directory.groups.groupsOf(KEY, ORG, id).length > 0), [], 'no profile or membership left');
  t.same((await directory.users.get(KEY, { organizationId: ORG, documentId: 'd1' }, { pageSize: 1000 })).rows, [], 'no grant left on the document');
  t.same(directory.groups.groupsOf(KEY, ORG, 'keep'), ['g1'], 'a user not named stays');
});
