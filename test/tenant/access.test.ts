import t, { type Test } from 'tap';
import type { TokenResource, UserClaims } from '../../src/auth/user-tokens.js';
import { tokenDocumentAccess } from '../../src/tenant/access.js';
import type { AccessType } from '../../src/tenant/api-key-config.js';
import { Directory } from '../../src/tenant/directory.js';
import { Store } from '../../src/store/env.js';

// One row of docs/access-model.md per test, named "row N: ...", against a real directory on LMDB.

const KEY = 'key1';
const ORG = 'org1';
const NOW = Date.UTC(2030, 0, 1);
const HOUR = 3_600_000;

function setup(t: Test, defaultType: AccessType = 'public') {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const defaults = new Map<string, AccessType>([[KEY, defaultType], ['key2', 'public']]);
  const directory = new Directory(store, { defaultAccessType: (apiKey) => defaults.get(apiKey), now: () => NOW });
  const claims = (userId: string, resources: TokenResource[] = [], apiKey = KEY): UserClaims => ({
    userId,
    apiKey,
    userProperties: {},
    resources,
    expiresAt: NOW / 1000 + 48 * 3600,
  });
  const access = (userId: string, documentId: string, resources: TokenResource[] = [], now = NOW) =>
    directory.access.documentAccess(claims(userId, resources), { apiKey: KEY, organizationId: ORG, documentId }, now);
  const grant = (userId: string, type: TokenResource['type'], id: string, accessRole?: 'viewer' | 'editor', expiresAt?: number) =>
    directory.permissions.add(KEY, { userId }, [
      { type, id, ...(type === 'organization' ? {} : { organizationId: ORG }), ...(accessRole === undefined ? {} : { accessRole }), ...(expiresAt === undefined ? {} : { expiresAt }) },
    ]);
  /** Folders a > b > c, document d1 in c, d0 at the top. */
  const tree = async (accessType?: AccessType) => {
    await directory.folders.add(KEY, ORG, [{ folderId: 'a' }, { folderId: 'b', parentFolderId: 'a' }, { folderId: 'c', parentFolderId: 'b' }]);
    await directory.documents.add(KEY, ORG, [{ documentId: 'd1', ...(accessType === undefined ? {} : { accessType }) }], { folderId: 'c' });
    await directory.documents.add(KEY, ORG, [{ documentId: 'd0', ...(accessType === undefined ? {} : { accessType }) }]);
  };
  return { directory, defaults, claims, access, grant, tree };
}

t.test('row 1: a token of another API key gets no access', async (t) => {
  const { directory, claims, tree } = setup(t);
  await tree('public');
  t.same(directory.access.documentAccess(claims('u1', [], 'key2'), { apiKey: KEY, organizationId: ORG, documentId: 'd1' }, NOW), { role: null });
});

t.test('row 2: a disabled organization blocks everyone, whatever the grants', async (t) => {
  const { directory, access, grant, tree } = setup(t);
  await tree('public');
  await grant('u1', 'document', 'd1', 'editor');
  await directory.organizations.setDisabled(KEY, [ORG], true);
  t.same(access('u1', 'd1'), { role: null });
  await directory.organizations.setDisabled(KEY, [ORG], false);
  t.same(access('u1', 'd1'), { role: 'editor' });
});

t.test('row 3: a disabled document blocks everyone, whatever the grants', async (t) => {
  const { directory, access, grant, tree } = setup(t);
  await tree('public');
  await grant('u1', 'document', 'd1', 'editor');
  await directory.documents.setDisabled(KEY, ORG, ['d1'], true);
  t.same(access('u1', 'd1'), { role: null });
  t.same(access('u1', 'd0'), { role: 'editor' }, 'other documents are unaffected');
});

t.test('row 4: public with no grant anywhere gives editor to any authenticated user', async (t) => {
  const { access, tree } = setup(t);
  await tree('public');
  t.same(access('stranger', 'd1'), { role: 'editor' });
});

t.test('row 5: on a public document an explicit viewer grant on the organization decides', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('public');
  await grant('u1', 'organization', ORG, 'viewer');
  t.same(access('u1', 'd1'), { role: 'viewer' });
});

t.test('row 6: organizationPrivate with no grant gives no access', async (t) => {
  const { access, tree } = setup(t);
  await tree('organizationPrivate');
  t.same(access('stranger', 'd1'), { role: null });
});

t.test('row 7: organizationPrivate gives organization members the role of their organization grant', async (t) => {
  const { directory, access, tree } = setup(t);
  await tree('organizationPrivate');
  await directory.users.add(KEY, { organizationId: ORG }, [{ userId: 'member', accessRole: 'viewer' }]);
  t.same(access('member', 'd1'), { role: 'viewer' });
  t.same(access('outsider', 'd1'), { role: null });
});

t.test('row 8: restricted skips organization grants', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'organization', ORG, 'editor');
  t.same(access('u1', 'd1'), { role: null });
  t.same(access('u1', 'd1', [{ type: 'organization', id: ORG }]), { role: null }, 'an organization resource in the token is skipped too');
});

t.test('row 9: restricted gives a document grant its role', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'document', 'd1', 'viewer');
  t.same(access('u1', 'd1'), { role: 'viewer' });
});

t.test('row 10: a grant on a folder is inherited by documents at any depth below it', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'folder', 'a', 'editor');
  t.same(access('u1', 'd1'), { role: 'editor' }, 'd1 sits in c, under b, under a');
  t.same(access('u1', 'd0'), { role: null }, 'd0 is not under a');
});

t.test('row 11: a document grant overrides folder and organization grants, even when weaker', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('organizationPrivate');
  await grant('u1', 'organization', ORG, 'editor');
  await grant('u1', 'folder', 'b', 'editor');
  await grant('u1', 'document', 'd1', 'viewer');
  t.same(access('u1', 'd1'), { role: 'viewer' });
});

t.test('row 12: a nearer folder grant overrides a farther one', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'folder', 'a', 'viewer');
  await grant('u1', 'folder', 'c', 'editor');
  t.same(access('u1', 'd1'), { role: 'editor' });
  await grant('u2', 'folder', 'a', 'editor');
  await grant('u2', 'folder', 'b', 'viewer');
  t.same(access('u2', 'd1'), { role: 'viewer' });
});

t.test('row 13: the document access type beats its folders, and the nearest folder type beats farther ones', async (t) => {
  const { directory, access, tree } = setup(t, 'public');
  await tree();
  t.same(access('stranger', 'd1'), { role: 'editor' }, 'nothing set: the API key default (public)');
  await directory.folders.setAccess(KEY, ORG, ['a'], { accessType: 'restricted', inherit: false });
  t.same(access('stranger', 'd1'), { role: null }, 'a restricts everything below it');
  await directory.folders.setAccess(KEY, ORG, ['c'], { accessType: 'public', inherit: false });
  t.same(access('stranger', 'd1'), { role: 'editor' }, 'c (nearer) is public');
  await directory.documents.setAccessType(KEY, ORG, ['d1'], 'restricted');
  t.same(access('stranger', 'd1'), { role: null }, 'the document itself is restricted');
  const [view] = directory.documents.get(KEY, ORG, { documentIds: ['d1'], pageSize: 10 }).rows;
  t.equal(view?.accessType, 'restricted');
});

t.test('row 14: with no access type set, the API key default restricted gives nothing without a grant', async (t) => {
  const { access, grant, tree } = setup(t, 'restricted');
  await tree();
  t.same(access('stranger', 'd1'), { role: null });
  await grant('u1', 'folder', 'c', 'viewer');
  t.same(access('u1', 'd1'), { role: 'viewer' });
});

t.test('row 15: an expired grant is absent, so the next level decides', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('organizationPrivate');
  await grant('u1', 'organization', ORG, 'editor');
  await grant('u1', 'document', 'd1', 'viewer', NOW + HOUR);
  t.same(access('u1', 'd1'), { role: 'viewer', expiresAt: NOW + HOUR }, 'before expiry the document grant decides');
  t.same(access('u1', 'd1', [], NOW + HOUR), { role: 'editor' }, 'at expiry the organization grant decides');
  await grant('u2', 'document', 'd1', 'editor', NOW - 1);
  t.same(access('u2', 'd1'), { role: null }, 'a grant added already expired gives nothing');
});

t.test('row 16: a live expiring grant reports expiresAt in milliseconds, seconds input converted', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  const inSeconds = Math.floor((NOW + 2 * HOUR) / 1000);
  await grant('u1', 'document', 'd1', 'viewer', inSeconds);
  t.same(access('u1', 'd1'), { role: 'viewer', expiresAt: inSeconds * 1000 });
});

t.test('row 17: at one level editor beats viewer, and a permanent grant beats an expiring one', async (t) => {
  const { directory, access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'document', 'd1', 'viewer');
  t.same(access('u1', 'd1', [{ type: 'document', id: 'd1', organizationId: ORG, accessRole: 'editor', expiresAt: NOW + HOUR }]), {
    role: 'editor',
    expiresAt: NOW + HOUR,
  });
  await directory.groups.add(KEY, ORG, [{ groupId: 'g' }]);
  await directory.groups.addUsers(KEY, ORG, 'g', ['u1']);
  await directory.permissions.add(KEY, { organizationId: ORG, groupId: 'g' }, [{ type: 'document', id: 'd1', organizationId: ORG, accessRole: 'editor' }]);
  t.same(access('u1', 'd1', [{ type: 'document', id: 'd1', organizationId: ORG, accessRole: 'editor', expiresAt: NOW + HOUR }]), { role: 'editor' });
  await grant('u2', 'document', 'd1', 'editor', NOW + HOUR);
  t.same(access('u2', 'd1', [{ type: 'document', id: 'd1', organizationId: ORG, expiresAt: NOW + 3 * HOUR }]), { role: 'editor', expiresAt: NOW + 3 * HOUR });
});

t.test('row 18: a group grant applies to members only', async (t) => {
  const { directory, access, tree } = setup(t);
  await tree('restricted');
  await directory.groups.add(KEY, ORG, [{ groupId: 'eng' }]);
  await directory.groups.addUsers(KEY, ORG, 'eng', ['member']);
  await directory.permissions.add(KEY, { organizationId: ORG, groupId: 'eng' }, [{ type: 'folder', id: 'b', organizationId: ORG, accessRole: 'viewer' }]);
  t.same(access('member', 'd1'), { role: 'viewer' });
  t.same(access('outsider', 'd1'), { role: null });
});

t.test('row 19: removing a user from the group removes what the group grant gave', async (t) => {
  const { directory, access, tree } = setup(t);
  await tree('restricted');
  await directory.groups.add(KEY, ORG, [{ groupId: 'eng' }]);
  await directory.groups.addUsers(KEY, ORG, 'eng', ['member']);
  await directory.permissions.add(KEY, { organizationId: ORG, groupId: 'eng' }, [{ type: 'document', id: 'd1', organizationId: ORG }]);
  t.same(access('member', 'd1'), { role: 'editor' });
  await directory.groups.deleteUsers(KEY, ORG, 'eng', { deleteAll: true });
  t.same(access('member', 'd1'), { role: null });
});

t.test('row 20: a token resource combines with directory grants at its level, strongest wins', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'document', 'd1', 'viewer');
  t.same(access('u1', 'd1', [{ type: 'document', id: 'd1', organizationId: ORG, accessRole: 'editor' }]), { role: 'editor' });
});

t.test('row 21: a token grant on the document overrides a directory grant on the organization', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('organizationPrivate');
  await grant('u1', 'organization', ORG, 'editor');
  t.same(access('u1', 'd1', [{ type: 'document', id: 'd1', organizationId: ORG, accessRole: 'viewer' }]), { role: 'viewer' });
});

t.test('row 22: a grant without accessRole is an editor grant', async (t) => {
  const { access, grant, tree } = setup(t);
  await tree('restricted');
  await grant('u1', 'document', 'd1');
  t.same(access('u1', 'd1'), { role: 'editor' });
  t.same(access('u2', 'd1', [{ type: 'document', id: 'd1', organizationId: ORG }]), { role: 'editor' });
});

t.test('row 23: a folder resource in the token applies to documents in and below that folder', async (t) => {
  const { access, tree } = setup(t);
  await tree('restricted');
  const folderB: TokenResource[] = [{ type: 'folder', id: 'b', organizationId: ORG, accessRole: 'viewer' }];
  t.same(access('u1', 'd1', folderB), { role: 'viewer' });
  t.same(access('u1', 'd0', folderB), { role: null });
  t.same(access('u1', 'd1', [{ type: 'folder', id: 'b', organizationId: 'other-org' }]), { role: null }, 'the folder must be of this organization');
});

t.test('row 24: a document unknown to the directory is decided by document and organization grants and the key default', async (t) => {
  const { access, defaults, claims } = setup(t, 'organizationPrivate');
  t.same(access('u1', 'ghost'), { role: null });
  const orgViewer: TokenResource[] = [{ type: 'organization', id: ORG, accessRole: 'viewer' }];
  t.same(access('u1', 'ghost', orgViewer), { role: 'viewer' });
  const docEditor: TokenResource[] = [...orgViewer, { type: 'document', id: 'ghost', organizationId: ORG }];
  t.same(access('u1', 'ghost', docEditor), { role: 'editor' });
  const ref = { apiKey: KEY, organizationId: ORG, documentId: 'ghost' };
  t.same(tokenDocumentAccess(claims('u1', docEditor), ref, NOW), { role: 'editor' }, 'agrees with the token-only resolver here');
  defaults.set(KEY, 'public');
  t.same(access('u1', 'ghost'), { role: 'editor' });
});
