// Tests durability of every kind of REST data end to end: directory (organizations, nested folders, documents, users,
// groups and members), grants with expiry, API-key config, comments and presence, each read back identically after a
// SIGTERM and after a SIGKILL of the real server process. The outbox is not read here: the process's delivery
// dispatcher consumes (acks) events as they commit; test/http/comments-restart.test.ts checks it with delivery off.
import t, { type Test } from 'tap';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { startServerProcess } from '../helpers/process.js';

const ORG = 'org-all';
const DOC = 'doc-all';
const inDoc = { organizationId: ORG, documentId: DOC };

/** Writes one of every kind of REST data; each write must be answered 200 (so it was committed). */
async function writeEveryKind(t: Test, api: ApiClient, credentials: Credentials): Promise<void> {
  const call = async (path: string, data: unknown): Promise<void> => {
    const response = await api.call(credentials, path, data);
    t.equal(response.status, 200, `${path} answered`);
  };
  await call('/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'restricted' });
  await call('/v2/organizations/add', { organizations: [{ organizationId: ORG, organizationName: 'All kinds' }] });
  await call('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'top', folderName: 'Top' }, { folderId: 'inner', parentFolderId: 'top' }] });
  await call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'inner', documents: [{ documentId: DOC, documentName: 'Doc' }] });
  await call('/v2/users/add', { organizationId: ORG, users: [{ userId: 'ann', name: 'Ann', accessRole: 'viewer' }, { userId: 'bob' }] });
  await call('/v2/organizations/usergroups/add', { organizationId: ORG, organizationUserGroups: [{ groupId: 'eng', groupName: 'Engineering' }] });
  await call('/v2/organizations/usergroups/users/add', { organizationId: ORG, organizationUserGroupId: 'eng', userIds: ['bob'] });
  await call('/v2/auth/permissions/add', { organizationUserGroup: { organizationId: ORG, organizationUserGroupId: 'eng' }, permissions: { resources: [{ type: 'folder', id: 'top', organizationId: ORG, accessRole: 'editor' }] } });
  // Expires in a year (seconds): the expiry must come back as it went in.
  await call('/v2/auth/permissions/add', { user: { userId: 'ann' }, permissions: { resources: [{ type: 'document', id: DOC, organizationId: ORG, accessRole: 'editor', expiresAt: Math.floor(Date.now() / 1000) + 365 * 24 * 3600 }] } });
  await call('/v2/commentannotations/add', { ...inDoc, commentAnnotations: [{ annotationId: 'thread', commentData: [{ commentText: 'first', from: { userId: 'ann' } }] }] });
  await call('/v2/commentannotations/comments/add', { ...inDoc, annotationId: 'thread', commentData: [{ commentText: 'reply', from: { userId: 'bob' } }] });
  await call('/v2/commentannotations/comments/update', { ...inDoc, annotationId: 'thread', commentIds: [2], updatedData: { commentText: 'reply (edited)', from: { userId: 'bob' } } });
  await call('/v2/commentannotations/update', { ...inDoc, annotationIds: ['thread'], updatedData: { priority: { id: 'p1', name: 'High', color: '#f00', lightColor: '#fee' } } });
  await call('/v2/presence/add', { ...inDoc, users: [{ userId: 'ann', name: 'Ann' }, { userId: 'bob', status: 'away' }] });
}

/** Reads back every kind written above, through REST. */
async function readEveryKind(api: ApiClient, credentials: Credentials): Promise<Record<string, unknown>> {
  const read = async (path: string, data: unknown): Promise<unknown> => {
    const response = await api.call(credentials, path, data);
    return response.body.result?.data ?? response.body;
  };
  return {
    apiKeyConfig: await read('/v2/workspace/apikeyconfig/get', {}),
    organizations: await read('/v2/organizations/get', {}),
    folders: await read('/v2/organizations/folders/get', { organizationId: ORG }),
    documents: await read('/v2/organizations/documents/get', { organizationId: ORG }),
    users: await read('/v2/users/get', { organizationId: ORG }),
    groupMembers: await read('/v2/users/get', { organizationId: ORG, organizationUserGroupIds: ['eng'] }),
    permissions: await read('/v2/auth/permissions/get', { organizationId: ORG, userIds: ['ann', 'bob'], folderIds: ['top', 'inner'], documentIds: [DOC] }),
    threads: await read('/v2/commentannotations/get', inDoc),
    comments: await read('/v2/commentannotations/comments/get', { ...inDoc, annotationId: 'thread' }),
    presence: await read('/v2/presence/get', inDoc),
  };
}

/** Sanity: what `writeEveryKind` wrote reads as asked. */
function checkWritten(t: Test, read: Record<string, unknown>): void {
  t.match(read, {
    apiKeyConfig: { defaultDocumentAccessType: 'restricted' },
    groupMembers: [{ userId: 'bob' }],
    permissions: { ann: { documents: { [DOC]: { accessRole: 'editor', expiresAt: Number } } }, bob: { folders: { top: { accessRole: 'editor' } } } },
    comments: [{ commentText: 'first' }, { commentText: 'reply (edited)' }],
    presence: [{ userId: 'ann' }, { userId: 'bob', status: 'away' }],
  }, 'sanity: everything was written as asked');
}

t.test('every kind of REST data answered before a SIGTERM, then before a SIGKILL, is there after each restart', async (t) => {
  const dataDir = t.testdir();
  // A long commit window: answered REST writes must not depend on it (they commit at once).
  const env = { DATA_DIR: dataDir, DEV_BOOTSTRAP: 'false', GROUP_COMMIT_MS: '1000' };
  const apiOf = (port: number): ApiClient => new ApiClient(`http://127.0.0.1:${port}`);

  // First life: one workspace's data, then SIGTERM.
  const first = await startServerProcess(t, env);
  const one = await apiOf(first.port).createWorkspace();
  await writeEveryKind(t, apiOf(first.port), one);
  const oneBefore = await readEveryKind(apiOf(first.port), one);
  checkWritten(t, oneBefore);
  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0, 'SIGTERM: stopped cleanly');

  // Second life: the first workspace is intact; a second workspace's data, then SIGKILL.
  const second = await startServerProcess(t, env);
  t.same(await readEveryKind(apiOf(second.port), one), oneBefore, 'after SIGTERM: every read answers as before');
  const two = await apiOf(second.port).createWorkspace();
  await writeEveryKind(t, apiOf(second.port), two);
  const twoBefore = await readEveryKind(apiOf(second.port), two);
  checkWritten(t, twoBefore);
  second.child.kill('SIGKILL');
  t.equal(await second.exited, 'SIGKILL', 'killed');

  // Third life: both workspaces read as they did.
  const third = await startServerProcess(t, env);
  t.same(await readEveryKind(apiOf(third.port), two), twoBefore, 'after SIGKILL: every read answers as before');
  t.same(await readEveryKind(apiOf(third.port), one), oneBefore, 'and the data of the first life is still there');
});
