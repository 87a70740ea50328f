import t from 'tap';
import { directoryFixture, expectError } from '../helpers/directory.js';

// Every directory operation with a valid body; each required field is then dropped, and then sent with the
// wrong type, and the answer must be INVALID_ARGUMENT naming that field.
const OPERATIONS: ReadonlyArray<{ path: string; body: Record<string, unknown> }> = [
  { path: '/v2/organizations/add', body: { organizations: [{ organizationId: 'o' }] } },
  { path: '/v2/organizations/update', body: { organizations: [{ organizationId: 'o', organizationName: 'O' }] } },
  { path: '/v2/organizations/delete', body: { organizationIds: ['o'] } },
  { path: '/v2/organizations/access/disablestate/update', body: { organizationIds: ['o'], disabled: true } },
  { path: '/v2/organizations/documents/add', body: { organizationId: 'o', documents: [{ documentId: 'd' }] } },
  { path: '/v2/organizations/documents/get', body: { organizationId: 'o' } },
  { path: '/v2/organizations/documents/update', body: { organizationId: 'o', documents: [{ documentId: 'd', documentName: 'D' }] } },
  { path: '/v2/organizations/documents/delete', body: { organizationId: 'o', documentIds: ['d'] } },
  { path: '/v2/organizations/documents/move', body: { organizationId: 'o', documentIds: ['d'], folderId: 'root' } },
  { path: '/v2/organizations/documents/access/update', body: { organizationId: 'o', documentIds: ['d'], accessType: 'public' } },
  { path: '/v2/organizations/documents/access/disablestate/update', body: { organizationId: 'o', documentIds: ['d'], disabled: false } },
  { path: '/v2/organizations/folders/add', body: { organizationId: 'o', folders: [{ folderId: 'f' }] } },
  { path: '/v2/organizations/folders/get', body: { organizationId: 'o' } },
  { path: '/v1/organizations/folders/update', body: { organizationId: 'o', folders: [{ folderId: 'f', folderName: 'F' }] } },
  { path: '/v2/organizations/folders/delete', body: { organizationId: 'o', folderId: 'f' } },
  { path: '/v2/organizations/folders/access/update', body: { organizationId: 'o', folderIds: ['f'], accessType: 'public' } },
  { path: '/v2/organizations/usergroups/add', body: { organizationId: 'o', organizationUserGroups: [{ groupId: 'g' }] } },
  { path: '/v1/organizations/usergroups/users/add', body: { organizationId: 'o', organizationUserGroupId: 'g', userIds: ['u'] } },
  { path: '/v1/organizations/usergroups/users/delete', body: { organizationId: 'o', organizationUserGroupId: 'g', deleteAll: true } },
  { path: '/v2/users/add', body: { organizationId: 'o', users: [{ userId: 'u' }] } },
  { path: '/v2/users/get', body: { organizationId: 'o' } },
  { path: '/v2/users/update', body: { organizationId: 'o', users: [{ userId: 'u', name: 'U' }] } },
  { path: '/v2/users/delete', body: { organizationId: 'o', userIds: ['u'] } },
  { path: '/v2/auth/permissions/add', body: { user: { userId: 'u' }, permissions: { resources: [{ type: 'organization', id: 'o' }] } } },
  { path: '/v2/auth/permissions/remove', body: { userId: 'u', permissions: { resources: [{ type: 'organization', id: 'o' }] } } },
  { path: '/v2/auth/permissions/get', body: { organizationId: 'o', userIds: ['u'] } },
];

/** Fields the operation cannot do without (optional ones such as documentIds filters are not listed). */
const OPTIONAL = new Set(['organizationUserGroup', 'user', 'userId', 'deleteAll']);

t.test('every directory operation answers INVALID_ARGUMENT naming a missing or mistyped required field', async (t) => {
  const fx = await directoryFixture(t);
  for (const { path, body } of OPERATIONS) {
    for (const field of Object.keys(body).filter((name) => !OPTIONAL.has(name))) {
      const { [field]: _dropped, ...rest } = body;
      expectError(t, await fx.call(path, rest), 'INVALID_ARGUMENT', new RegExp(`data\\.${field} is required`));
      const wrongType = typeof body[field] === 'string' ? 42 : 'text';
      expectError(t, await fx.call(path, { ...rest, [field]: wrongType }), 'INVALID_ARGUMENT', new RegExp(`data\\.${field} must be`));
    }
    if ('organizationId' in body) {
      expectError(t, await fx.call(path, { ...body, organizationId: '' }), 'INVALID_ARGUMENT', /data\.organizationId must not be empty/);
    }
  }
});

t.test('bulk items missing their id are refused naming the item and field', async (t) => {
  const fx = await directoryFixture(t);
  expectError(t, await fx.call('/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: 'a' }, { documentName: 'x' }] }), 'INVALID_ARGUMENT', /data\.documents\[1\]\.documentId is required/);
  expectError(t, await fx.call('/v2/organizations/add', { organizations: [] }), 'INVALID_ARGUMENT', /data\.organizations must have at least 1/);
  expectError(t, await fx.call('/v2/organizations/documents/add', { organizationId: 'o', documents: Array.from({ length: 1001 }, (_, i) => ({ documentId: `d${i}` })) }), 'INVALID_ARGUMENT', /at most 1000/);
});
