import t from 'tap';
import { dataOf, directoryFixture, expectError, outcome, type ItemResult } from '../helpers/directory.js';

interface UserRow {
  userId: string;
  accessRole: string;
  name?: string;
  email?: string;
  [profile: string]: unknown;
}

const ORG = 'org-users';

t.test('users are added, read, updated and deleted at organization, folder and document level', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f' }] });
  const added = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v1/users/add', {
      organizationId: ORG,
      users: [{ userId: 'ann', name: 'Ann', email: 'ann@example.com', accessRole: 'viewer', team: 'red' }, { userId: 'bob' }, { userId: 'x' }, { userId: 'x' }],
    }),
  );
  t.same(outcome(added), { ok: ['ann', 'bob'], failed: ['x'] });
  t.same(added['ann'], { success: true, id: 'ann', message: 'User added.' });
  await fx.call('/v2/users/add', { organizationId: ORG, folderId: 'f', users: [{ userId: 'cat', accessRole: 'editor' }] });
  await fx.call('/v2/users/add', { organizationId: ORG, documentId: 'doc1', users: [{ userId: 'ann', accessRole: 'editor' }] });

  const get = async (scope: Record<string, unknown>) => dataOf(t, await fx.call<UserRow[]>('/v2/users/get', { organizationId: ORG, ...scope }));
  const org = await get({});
  t.same(org.map((u) => [u.userId, u.accessRole]), [['ann', 'viewer'], ['bob', 'editor']], 'default role editor');
  t.same(org[0], { userId: 'ann', accessRole: 'viewer', name: 'Ann', email: 'ann@example.com', team: 'red' });
  t.same((await get({ folderId: 'f' })).map((u) => [u.userId, u.accessRole]), [['cat', 'editor']]);
  t.same((await get({ documentId: 'doc1' })).map((u) => [u.userId, u.accessRole, u.name]), [['ann', 'editor', 'Ann']], 'a document-level user shares the profile');
  const docs = dataOf(t, await fx.call<Array<{ id: string }>>('/v2/organizations/documents/get', { organizationId: ORG }));
  t.same(docs.map((d) => d.id), ['doc1'], 'adding users at a document registers the document');

  const updated = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/users/update', { organizationId: ORG, users: [{ userId: 'bob', accessRole: 'viewer', name: 'Bob' }, { userId: 'cat', name: 'C' }] }),
  );
  t.same(outcome(updated), { ok: ['bob'], failed: ['cat'] }, 'cat has no organization-level grant');
  t.equal(updated['cat']?.message, 'User does not exist.');
  t.same((await get({ userIds: ['bob', 'nobody'] })).map((u) => [u.userId, u.accessRole, u.name]), [['bob', 'viewer', 'Bob']]);

  const removedDoc = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/users/delete', { organizationId: ORG, documentId: 'doc1', userIds: ['ann', 'bob'] }));
  t.same(outcome(removedDoc), { ok: ['ann'], failed: ['bob'] });
  t.same(await get({ documentId: 'doc1' }), [], 'ann no longer holds a grant at the document');
  t.same((await get({})).map((u) => u.userId), ['ann', 'bob'], 'removal at the document leaves the organization membership');
  const removedOrg = dataOf(t, await fx.call<Record<string, ItemResult>>('/v1/users/delete', { organizationId: ORG, userIds: ['ann', 'ghost'] }));
  t.same(outcome(removedOrg), { ok: ['ann'], failed: ['ghost'] });
  t.same((await get({})).map((u) => u.userId), ['bob']);
});

t.test('Get Users pages in user id order with nextPageToken', async (t) => {
  const fx = await directoryFixture(t);
  const userIds = Array.from({ length: 25 }, (_, i) => `user-${String(i).padStart(2, '0')}`);
  await fx.call('/v2/users/add', { organizationId: ORG, users: userIds.map((userId) => ({ userId })) });
  const seen: string[] = [];
  let pageToken: unknown;
  do {
    const page = await fx.call<UserRow[]>('/v2/users/get', { organizationId: ORG, pageSize: 10, ...(typeof pageToken === 'string' ? { pageToken } : {}) });
    seen.push(...dataOf(t, page).map((u) => u.userId));
    pageToken = page.body.result?.['nextPageToken'];
  } while (typeof pageToken === 'string');
  t.same(seen, userIds);
});

t.test('users operations refuse a scope naming both a folder and a document, and a missing folder', async (t) => {
  const fx = await directoryFixture(t);
  expectError(t, await fx.call('/v2/users/add', { organizationId: ORG, folderId: 'f', documentId: 'd', users: [{ userId: 'u' }] }), 'INVALID_ARGUMENT', /data\.documentId and data\.folderId/);
  expectError(t, await fx.call('/v2/users/add', { organizationId: ORG, folderId: 'missing', users: [{ userId: 'u' }] }), 'NOT_FOUND', /data\.folderId/);
  const created = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/users/add', { organizationId: ORG, folderId: 'made', createFolder: true, users: [{ userId: 'u' }] }));
  t.equal(created['u']?.success, true, 'createFolder creates the folder');
  expectError(t, await fx.call('/v2/users/add', { organizationId: ORG, users: [{ userId: 'u', accessRole: 'owner' }] }), 'INVALID_ARGUMENT', /data\.users\[0\]\.accessRole must be one of/);
  expectError(t, await fx.call('/v2/users/update', { organizationId: ORG, users: [{ userId: 'u' }] }), 'INVALID_ARGUMENT', /data\.users\[0\]/);
});
