// Tests users/get filtered by groups and allDocuments filtered by users: the same pages, in the same order, as a walk of every grant row gave, read in chunks.
import t, { type Test } from 'tap';
import type { Key } from 'lmdb';
import { CHUNK_ROWS } from '../../src/store/chunked-scan.js';
import { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { Directory } from '../../src/tenant/directory.js';
import type { GrantRecord } from '../../src/tenant/directory/records.js';
import type { UserScope } from '../../src/tenant/directory/users.js';

const KEY = 'key1';
const ORG = 'org1';
const NOW = Date.UTC(2030, 0, 1);
/** Ids whose stored (UTF-8 byte) order differs from JavaScript's string order, and one that starts with a control character. */
const ODD = ['\u{1F600}x', '\uFFFDy', '\u0001a', 'a', 'ab'];

function setup(t: Test) {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const directory = new Directory(store, { defaultAccessType: () => 'public', now: () => NOW });
  const rows = store.records<unknown>(DB.directory);
  const range = (prefix: Key[]) => Array.from(rows.getRange({ start: prefix, end: [...prefix, KEY_END] }));
  return { store, directory, range };
}

interface Row {
  userId: string;
  accessRole: string;
  expiresAt?: number;
  documentId?: string;
}

const brief = (rows: readonly Row[]) => rows.map((r) => [r.documentId ?? '', r.userId, r.accessRole, r.expiresAt ?? 0].join('|'));

t.test('users/get with groups pages exactly as the walk of the scope’s grants filtered by membership did', async (t) => {
  const { directory, range } = setup(t);
  const users = [...ODD, ...Array.from({ length: CHUNK_ROWS + 300 }, (_, i) => `u${String(i).padStart(5, '0')}`)];
  // Every third user is granted at the organization, every fifth on the document; one in seven has expired there.
  const orgUsers = users.filter((userId, i) => i % 3 === 0 || userId === '\uFFFDy');
  await directory.users.add(KEY, { organizationId: ORG }, orgUsers.map((userId, i) => ({ userId, name: `N ${userId}`, accessRole: i % 2 === 0 ? 'viewer' : 'editor' })));
  for (const [i, userId] of users.entries()) {
    if (i % 5 !== 0) continue;
    await directory.permissions.add(KEY, { userId }, [{ type: 'document', id: 'doc', organizationId: ORG, ...(i % 7 === 0 ? { expiresAt: NOW - 1 } : {}) }]);
  }
  await directory.permissions.add(KEY, { userId: 'ab' }, [{ type: 'organization', id: ORG, expiresAt: NOW - 1 }]);
  // big: every other user (more than a chunk, most without a grant at the document); small overlaps it; empty has none.
  await directory.groups.add(KEY, ORG, [{ groupId: 'big' }, { groupId: 'small' }, { groupId: 'empty' }]);
  await directory.groups.addUsers(KEY, ORG, 'big', users.filter((_, i) => i % 2 === 0));
  await directory.groups.addUsers(KEY, ORG, 'small', [...ODD, 'u00003', 'u00004', 'u00015', 'u01200', 'not-granted']);

  const legacy = (scope: UserScope, groupIds: readonly string[]): string[] => {
    const level = scope.documentId === undefined ? 'organization' : 'document';
    const granted = range([KEY, 'grant', ORG, level, scope.documentId ?? ORG, 'user']);
    const member = (userId: string) => groupIds.some((g) => range([KEY, 'member', ORG, g, userId]).length > 0);
    return brief(
      granted.flatMap(({ key, value }) => {
        const userId = String((key as unknown[])[6]);
        const grant = value as GrantRecord;
        if (!member(userId) || (grant.expiresAt !== undefined && grant.expiresAt <= NOW)) return [];
        return [{ userId, accessRole: grant.accessRole, ...(grant.expiresAt === undefined ? {} : { expiresAt: grant.expiresAt }) }];
      }),
    );
  };

  for (const scope of [{ organizationId: ORG }, { organizationId: ORG, documentId: 'doc' }]) {
    for (const groupIds of [['big'], ['small'], ['small', 'big', 'small'], ['empty', 'missing']]) {
      const expected = legacy(scope, groupIds);
      for (const pageSize of [1, 7, CHUNK_ROWS, 5000]) {
        if (pageSize === 1 && expected.length > 50) continue;
        const got: string[] = [];
        let token: string | undefined;
        let pages = 0;
        do {
          const page = await directory.users.get(KEY, scope, { organizationUserGroupIds: groupIds, pageSize, ...(token === undefined ? {} : { pageToken: token }) });
          got.push(...brief(page.rows));
          token = page.nextPageToken;
          pages++;
          if (token !== undefined) t.equal(page.rows.length, pageSize, 'a page with a token is full');
        } while (token !== undefined && pages < 10_000);
        t.same(got, expected, `${scope.documentId ?? 'organization'} ${groupIds.join('+')} by ${pageSize}: the same rows in the same order`);
        t.equal(pages, Math.max(1, Math.ceil(expected.length / pageSize)), 'a token only while a matching row follows');
      }
    }
  }
  t.ok(legacy({ organizationId: ORG }, ['big']).length > 200, 'the fixture has many members with a grant');
  const small = await directory.users.get(KEY, { organizationId: ORG }, { organizationUserGroupIds: ['small'], pageSize: 10 });
  t.same(small.rows.map((r) => r.userId), ['a', 'u00004', '\uFFFDy', '\u{1F600}x'], 'in stored (UTF-8) order, not JavaScript string order; expired and ungranted members left out');
  const profile = await directory.users.get(KEY, { organizationId: ORG }, { organizationUserGroupIds: ['small'], pageSize: 1 });
  t.match(profile.rows[0], { name: `N ${profile.rows[0]?.userId}` }, 'rows carry the profile');
});

t.test('the group walk yields the event loop between chunks', async (t) => {
  const { directory } = setup(t);
  const members = Array.from({ length: CHUNK_ROWS * 2 }, (_, i) => `m${String(i).padStart(5, '0')}`);
  await directory.groups.add(KEY, ORG, [{ groupId: 'g' }]);
  await directory.groups.addUsers(KEY, ORG, 'g', members);
  await directory.users.add(KEY, { organizationId: ORG }, [{ userId: 'm01999' }, { userId: 'outsider' }]);
  let turned = false;
  setImmediate(() => (turned = true));
  const page = await directory.users.get(KEY, { organizationId: ORG }, { organizationUserGroupIds: ['g'], pageSize: 10 });
  t.ok(turned, 'a callback queued behind the listing ran before it answered');
  t.same(page.rows.map((r) => r.userId), ['m01999'], 'and it found the one member with a grant, past the first chunk');
});

t.test('allDocuments with userIds pages exactly as the walk of every document grant filtered by user did', async (t) => {
  const { directory, range } = setup(t);
  const documents = Array.from({ length: CHUNK_ROWS + 200 }, (_, i) => `d${String(i).padStart(5, '0')}`);
  const named = ['ann', 'bob', ...ODD];
  const grant = (userId: string, ids: readonly string[], expiresAt?: number) =>
    directory.permissions.add(KEY, { userId }, ids.map((id) => ({ type: 'document' as const, id, organizationId: ORG, ...(expiresAt === undefined ? {} : { expiresAt }) })));
  // ann and bob share more than a chunk of documents (a chunk may end between them on one document).
  await grant('ann', documents.filter((_, i) => i % 10 !== 3));
  await grant('bob', documents.filter((_, i) => i % 3 !== 0));
  await grant('bob', documents.filter((_, i) => i % 3 === 0 && i % 6 !== 0), NOW - 1);
  for (const [i, userId] of ODD.entries()) await grant(userId, documents.filter((_, j) => j % (7 + i) === 0));
  await grant('carl', documents);
  await directory.users.add(KEY, { organizationId: ORG }, [{ userId: 'ann', name: 'Ann' }, { userId: 'nobody' }]);
  await directory.groups.add(KEY, ORG, [{ groupId: 'team' }]);
  await directory.permissions.add(KEY, { organizationId: ORG, groupId: 'team' }, documents.slice(-5).map((id) => ({ type: 'document' as const, id, organizationId: ORG })));
  await directory.users.add(KEY, { organizationId: 'org2', documentId: 'd00001' }, [{ userId: 'ann' }]);

  const grants = range([KEY, 'grant', ORG, 'document']).flatMap(({ key, value }) => {
    const [, , , , documentId, kind, userId] = key as string[];
    return kind === 'user' ? [{ documentId: documentId ?? '', userId: userId ?? '', grant: value as GrantRecord }] : [];
  });
  /** The old listing: every user grant row in key order, filtered; a full page has a token when any user grant row follows. */
  const legacyPages = (userIds: readonly string[], pageSize: number): Array<{ rows: string[]; token: boolean }> => {
    const wanted = new Set(userIds);
    const pages: Array<{ rows: string[]; token: boolean }> = [];
    let rows: string[] = [];
    for (const [i, { documentId, userId, grant }] of grants.entries()) {
      if (!wanted.has(userId) || (grant.expiresAt !== undefined && grant.expiresAt <= NOW)) continue;
      rows.push(brief([{ documentId, userId, accessRole: grant.accessRole, ...(grant.expiresAt === undefined ? {} : { expiresAt: grant.expiresAt }) }])[0] ?? '');
      if (rows.length === pageSize) {
        const token = i + 1 < grants.length;
        pages.push({ rows, token });
        rows = [];
        if (!token) return pages;
      }
    }
    pages.push({ rows, token: false });
    return pages;
  };

  for (const userIds of [['ann'], ['bob', 'ann'], named, ['\u{1F600}x', '\uFFFDy'], ['carl'], ['nobody', 'missing'], ['ann', 'ann']]) {
    for (const pageSize of [1, 9, CHUNK_ROWS, 5000]) {
      const expected = legacyPages(userIds, pageSize);
      if (pageSize === 1 && expected.length > 60) continue;
      const got: Array<{ rows: string[]; token: boolean }> = [];
      let token: string | undefined;
      do {
        const page = await directory.users.onDocuments(KEY, ORG, { userIds, pageSize, ...(token === undefined ? {} : { pageToken: token }) });
        token = page.nextPageToken;
        got.push({ rows: brief(page.rows), token: token !== undefined });
      } while (token !== undefined && got.length < 10_000);
      t.same(got, expected, `${userIds.join('+')} by ${pageSize}: the same pages, rows and tokens`);
    }
  }
  const first = await directory.users.onDocuments(KEY, ORG, { userIds: named, pageSize: 6 });
  t.same(brief(first.rows), ['d00000|\u0001a|editor|0', 'd00000|a|editor|0', 'd00000|ab|editor|0', 'd00000|ann|editor|0', 'd00000|\uFFFDy|editor|0', 'd00000|\u{1F600}x|editor|0'], 'one document’s users in stored user id order');
  const page = await directory.users.onDocuments(KEY, ORG, { userIds: ['ann'], pageSize: 1 });
  t.match(page.rows[0], { documentId: 'd00000', userId: 'ann', name: 'Ann' }, 'rows carry the profile and the document');

  let turned = false;
  setImmediate(() => (turned = true));
  const all = await directory.users.onDocuments(KEY, ORG, { userIds: ['ann', 'bob'], pageSize: 5000 });
  t.ok(turned, 'the merged walk yields the event loop between chunks');
  t.ok(all.rows.length > CHUNK_ROWS, 'over more than a chunk of rows');
});
