import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import t from 'tap';
import { dataOf, directoryFixture, expectError, outcome, type ItemResult } from '../helpers/directory.js';

const ORG = 'org-auth';
const user = { name: 'Ann', email: 'ann@example.com' };

t.test('a token from generate_token verifies with a standard JOSE verifier against the served JWKS', async (t) => {
  const fx = await directoryFixture(t);
  const resources = [
    { type: 'organization', id: ORG, accessRole: 'viewer' },
    { type: 'document', id: 'd1', organizationId: ORG, expiresAt: 4102444800 },
  ];
  const minted = await fx.call<{ token: string }>('/v2/auth/generate_token', { userId: 'ann', userProperties: { ...user, plan: 'pro' }, permissions: { resources } });
  const { token } = dataOf(t, minted);
  const jwks = createRemoteJWKSet(new URL(`${fx.url}/.well-known/jwks.json`));
  const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: 'plait', algorithms: ['ES256'] });
  t.equal(protectedHeader.kid, fx.server.services.userTokens.currentKid);
  t.equal(payload.sub, 'ann');
  t.equal(payload['apiKey'], fx.credentials.apiKey);
  t.same(payload['user'], { ...user, plan: 'pro' });
  t.same(payload['permissions'], { resources });
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 48 * 3600, 'lives 48 hours');

  const claims = await fx.server.services.userTokens.verify(token);
  const access = (documentId: string) =>
    fx.server.services.directory.access.documentAccess(claims, { apiKey: fx.credentials.apiKey, organizationId: ORG, documentId }, Date.now());
  t.same(access('d1'), { role: 'editor', expiresAt: 4102444800000 }, 'the token document grant decides for d1');
  t.same(access('d2'), { role: 'viewer' }, 'the token organization grant decides elsewhere');
});

t.test('a token signed before a key rotation still verifies against the served JWKS', async (t) => {
  const fx = await directoryFixture(t);
  const mint = async () => dataOf(t, await fx.call<{ token: string }>('/v2/auth/generate_token', { userId: 'ann', userProperties: user, permissions: { resources: [] } })).token;
  const before = await mint();
  await fx.server.services.userTokens.rotate();
  const after = await mint();
  t.not(decodeProtectedHeader(before).kid, decodeProtectedHeader(after).kid);
  const jwks = createRemoteJWKSet(new URL(`${fx.url}/.well-known/jwks.json`));
  for (const token of [before, after]) t.equal((await jwtVerify(token, jwks)).payload.sub, 'ann');
});

t.test('generate_token refuses organizationId in userProperties and names missing fields', async (t) => {
  const fx = await directoryFixture(t);
  const mint = (data: unknown) => fx.call('/v2/auth/generate_token', data);
  expectError(t, await mint({ userId: 'u', userProperties: { ...user, organizationId: ORG }, permissions: { resources: [] } }), 'INVALID_ARGUMENT', /data\.userProperties\.organizationId is not accepted/);
  expectError(t, await mint({ userProperties: user, permissions: { resources: [] } }), 'INVALID_ARGUMENT', /data\.userId is required/);
  expectError(t, await mint({ userId: 'u', userProperties: { name: 'A' }, permissions: { resources: [] } }), 'INVALID_ARGUMENT', /data\.userProperties\.email is required/);
  expectError(t, await mint({ userId: 'u', userProperties: user, permissions: { resources: [{ type: 'document', id: 'd' }] } }), 'INVALID_ARGUMENT', /organizationId is required/);
  const unwrapped = await fx.api.send('/v2/auth/generate_token', JSON.stringify({ userId: 'u' }), { 'x-svc-api-key': fx.credentials.apiKey, 'x-svc-auth-token': fx.credentials.authToken });
  t.equal(unwrapped.body.error?.status, 'INVALID_ARGUMENT');
});

t.test('permissions add, get and remove, with expiry, group grantees and per-item failures', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f' }] });
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'f', documents: [{ documentId: 'd1', accessType: 'restricted' }] });
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const added = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/auth/permissions/add', {
      user: { userId: 'ann' },
      permissions: {
        resources: [
          { type: 'organization', id: ORG, accessRole: 'viewer' },
          { type: 'document', id: 'd1', organizationId: ORG, accessRole: 'editor', expiresAt },
          { type: 'folder', id: 'missing', organizationId: ORG },
          { type: 'folder', id: 'f', organizationId: ORG },
          { type: 'folder', id: 'f', organizationId: ORG },
        ],
      },
    }),
  );
  t.same(outcome(added), { ok: [`document:${ORG}:d1`, `organization:${ORG}`], failed: [`folder:${ORG}:f`, `folder:${ORG}:missing`] });
  t.equal(added[`folder:${ORG}:missing`]?.code, 'not-found');
  t.equal(added[`folder:${ORG}:f`]?.code, 'duplicate');

  const report = dataOf(
    t,
    await fx.call<Record<string, Record<string, Record<string, Record<string, unknown>>>>>('/v2/auth/permissions/get', {
      organizationId: ORG,
      userIds: ['ann', 'bob'],
      folderIds: ['f', 'nope'],
      documentIds: ['d1'],
    }),
  );
  t.same(report['ann']?.['organization'], { [ORG]: { accessRole: 'viewer' } });
  t.same(report['ann']?.['documents'], { d1: { accessRole: 'editor', accessType: 'restricted', expiresAt: expiresAt * 1000 } });
  t.same(report['ann']?.['folders']?.['f'], { accessRole: 'viewer', accessType: 'public' }, 'the folder is public; the organization grant decides');
  t.same(report['ann']?.['folders']?.['nope'], { error: 'The folder does not exist.', errorCode: 'does_not_exist' });
  t.equal(report['bob']?.['documents']?.['d1']?.['errorCode'], 'permission_denied');

  await fx.call('/v2/organizations/usergroups/add', { organizationId: ORG, organizationUserGroups: [{ groupId: 'eng' }] });
  await fx.call('/v2/organizations/usergroups/users/add', { organizationId: ORG, organizationUserGroupId: 'eng', userIds: ['bob'] });
  const group = { organizationId: ORG, organizationUserGroupId: 'eng' };
  const groupAdd = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/auth/permissions/add', {
      organizationUserGroup: group,
      permissions: { resources: [{ type: 'document', id: 'd1', organizationId: ORG, accessRole: 'viewer' }, { type: 'organization', id: 'elsewhere' }] },
    }),
  );
  t.same(outcome(groupAdd), { ok: [`document:${ORG}:d1`], failed: ['organization:elsewhere'] }, 'a group grant stays in its organization');
  const bob = dataOf(t, await fx.call<Record<string, { documents: Record<string, { accessRole?: string }> }>>('/v2/auth/permissions/get', { organizationId: ORG, userIds: ['bob'], documentIds: ['d1'] }));
  t.equal(bob['bob']?.documents['d1']?.accessRole, 'viewer', 'bob reads d1 through his group');

  const removed = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/auth/permissions/remove', {
      userId: 'ann',
      permissions: { resources: [{ type: 'document', id: 'd1', organizationId: ORG }, { type: 'folder', id: 'f', organizationId: ORG }] },
    }),
  );
  t.same(outcome(removed), { ok: [`document:${ORG}:d1`], failed: [`folder:${ORG}:f`] });
  const after = dataOf(t, await fx.call<Record<string, { documents: Record<string, { errorCode?: string }> }>>('/v2/auth/permissions/get', { organizationId: ORG, userIds: ['ann'], documentIds: ['d1'] }));
  t.equal(after['ann']?.documents['d1']?.errorCode, 'permission_denied', 'restricted: the organization grant does not reach d1');

  expectError(t, await fx.call('/v2/auth/permissions/add', { permissions: { resources: [{ type: 'organization', id: ORG }] } }), 'INVALID_ARGUMENT', /data\.user\.userId is required/);
  expectError(t, await fx.call('/v2/auth/permissions/add', { user: { userId: 'a' }, organizationUserGroup: group, permissions: { resources: [{ type: 'organization', id: ORG }] } }), 'INVALID_ARGUMENT', /cannot both be set/);
  expectError(t, await fx.call('/v2/auth/permissions/get', { organizationId: ORG }), 'INVALID_ARGUMENT', /data\.userIds is required/);
  expectError(t, await fx.call('/v2/auth/permissions/add', { organizationUserGroup: { organizationId: ORG, organizationUserGroupId: 'nope' }, permissions: { resources: [{ type: 'organization', id: ORG }] } }), 'NOT_FOUND', /organizationUserGroupId/);
});
