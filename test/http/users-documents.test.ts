// Tests users/get with allDocuments and groupByDocumentId (upstream 2.11): every document's users, paged and grouped.
import t from 'tap';
import { dataOf, directoryFixture, expectError } from '../helpers/directory.js';

interface Row {
  userId: string;
  accessRole: string;
  documentId?: string;
  name?: string;
}

const ORG = 'org-all-docs';

t.test('allDocuments lists the users of every document; groupByDocumentId groups them; pages follow', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/users/add', { organizationId: ORG, users: [{ userId: 'org-only', name: 'Org' }] });
  await fx.call('/v2/users/add', { organizationId: ORG, documentId: 'doc-b', users: [{ userId: 'ann', name: 'Ann', accessRole: 'viewer' }, { userId: 'bob' }] });
  await fx.call('/v2/users/add', { organizationId: ORG, documentId: 'doc-a', users: [{ userId: 'ann', accessRole: 'editor' }] });
  await fx.call('/v2/users/add', { organizationId: 'another-org', documentId: 'doc-a', users: [{ userId: 'zed' }] });
  // An expired grant counts as absent.
  await fx.call('/v2/auth/permissions/add', {
    user: { userId: 'gone' },
    permissions: { resources: [{ type: 'document', id: 'doc-c', organizationId: ORG, expiresAt: 1 }] },
  });

  const flat = dataOf(t, await fx.call<Row[]>('/v2/users/get', { organizationId: ORG, allDocuments: true }));
  t.same(
    flat.map((u) => [u.documentId, u.userId, u.accessRole]),
    [['doc-a', 'ann', 'editor'], ['doc-b', 'ann', 'viewer'], ['doc-b', 'bob', 'editor']],
    'one row per document membership, in document then user order; organization-only and expired users are not listed',
  );
  t.equal(flat[0]?.name, 'Ann', 'rows carry the profile');

  const grouped = dataOf(t, await fx.call<Record<string, Row[]>>('/v2/users/get', { organizationId: ORG, allDocuments: true, groupByDocumentId: true }));
  t.same(Object.keys(grouped), ['doc-a', 'doc-b']);
  t.same(grouped['doc-b']?.map((u) => u.userId), ['ann', 'bob']);
  t.equal(grouped['doc-b']?.[0]?.documentId, undefined, 'the group key is the document id; rows do not repeat it');

  const onlyAnn = dataOf(t, await fx.call<Row[]>('/v2/users/get', { organizationId: ORG, allDocuments: true, userIds: ['ann'] }));
  t.same(onlyAnn.map((u) => u.documentId), ['doc-a', 'doc-b'], 'userIds filters');

  const first = await fx.call<Row[]>('/v2/users/get', { organizationId: ORG, allDocuments: true, pageSize: 2 });
  t.same(dataOf(t, first).map((u) => u.userId), ['ann', 'ann']);
  const token = first.body.result?.nextPageToken;
  t.type(token, 'string', 'a next page');
  const second = await fx.call<Row[]>('/v2/users/get', { organizationId: ORG, allDocuments: true, pageSize: 2, pageToken: token });
  t.same(dataOf(t, second).map((u) => [u.documentId, u.userId]), [['doc-b', 'bob']]);
  t.equal(second.body.result?.nextPageToken, undefined, 'the last page has no token');

  const oneDocGrouped = dataOf(t, await fx.call<Record<string, Row[]>>('/v2/users/get', { organizationId: ORG, documentId: 'doc-b', groupByDocumentId: true }));
  t.same(Object.keys(oneDocGrouped), ['doc-b'], 'groupByDocumentId with one document');
});

t.test('allDocuments and groupByDocumentId refuse what they cannot mean', async (t) => {
  const fx = await directoryFixture(t);
  expectError(t, await fx.call('/v2/users/get', { organizationId: ORG, allDocuments: true, documentId: 'd' }), 'INVALID_ARGUMENT', /allDocuments/);
  expectError(t, await fx.call('/v2/users/get', { organizationId: ORG, allDocuments: true, organizationUserGroupIds: ['g'] }), 'INVALID_ARGUMENT', /organizationUserGroupIds/);
  expectError(t, await fx.call('/v2/users/get', { organizationId: ORG, groupByDocumentId: true }), 'INVALID_ARGUMENT', /groupByDocumentId/);
  expectError(t, await fx.call('/v2/users/get', { organizationId: ORG, allDocuments: 'yes' }), 'INVALID_ARGUMENT', /allDocuments/);
  const other = await fx.call('/v2/users/get', { organizationId: ORG, allDocuments: true, pageSize: 1, pageToken: 'bm90LWEtdG9rZW4' });
  expectError(t, other, 'INVALID_ARGUMENT', /pageToken/);
});
