import t from 'tap';
import { DB } from '../../src/store/keys.js';
import { dataOf, directoryFixture, outcome, type DirectoryFixture, type ItemResult } from '../helpers/directory.js';

const O = 'org-bulk';

interface BulkCase {
  readonly path: string;
  readonly body: Record<string, unknown>;
  readonly ok: string[];
  readonly failed: string[];
  /** Reads back and returns something that shows the valid items were written. */
  readonly written: (fx: DirectoryFixture) => Promise<unknown>;
  readonly expected: unknown;
}

const read = async (fx: DirectoryFixture, path: string, data: Record<string, unknown>): Promise<unknown> => (await fx.call(path, data)).body.result?.data;
const docs = (fx: DirectoryFixture, pick: (row: Record<string, unknown>) => unknown) =>
  read(fx, '/v2/organizations/documents/get', { organizationId: O }).then((rows) => (rows as Array<Record<string, unknown>>).map(pick));

// Each case mixes a valid item, an unknown (or existing) id and a duplicated id. Cases run in order on one organization.
const CASES: BulkCase[] = [
  { path: '/v2/organizations/add', body: { organizations: [{ organizationId: O }, { organizationId: 'o2' }, { organizationId: 'dup' }, { organizationId: 'dup' }] }, ok: [O, 'o2'], failed: ['dup'],
    written: (fx) => read(fx, '/v2/organizations/get', {}).then((rows) => (rows as Array<{ id: string }>).map((r) => r.id)), expected: ['o2', O] },
  { path: '/v2/organizations/update', body: { organizations: [{ organizationId: O, organizationName: 'N' }, { organizationId: 'ghost', organizationName: 'G' }, { organizationId: 'o2', organizationName: 'a' }, { organizationId: 'o2', organizationName: 'b' }] },
    ok: [O], failed: ['ghost', 'o2'], written: (fx) => read(fx, '/v2/organizations/get', { organizationIds: [O, 'o2'] }).then((rows) => (rows as Array<{ organizationName: string }>).map((r) => r.organizationName)), expected: ['N', 'o2'] },
  { path: '/v2/organizations/folders/add', body: { organizationId: O, folders: [{ folderId: 'f' }, { folderId: 'g', parentFolderId: 'ghost' }, { folderId: 'h' }, { folderId: 'h' }] }, ok: ['f'], failed: ['g', 'h'],
    written: (fx) => read(fx, '/v2/organizations/folders/get', { organizationId: O }).then((rows) => (rows as Array<{ folderId: string }>).map((r) => r.folderId)), expected: ['f'] },
  { path: '/v2/organizations/documents/add', body: { organizationId: O, documents: [{ documentId: 'd1' }, { documentId: 'd2' }, { documentId: 'dd' }, { documentId: 'dd' }] }, ok: ['d1', 'd2'], failed: ['dd'],
    written: (fx) => docs(fx, (r) => r['id']), expected: ['d1', 'd2'] },
  { path: '/v2/organizations/documents/update', body: { organizationId: O, documents: [{ documentId: 'd1', documentName: 'One' }, { documentId: 'ghost', documentName: 'G' }, { documentId: 'd2', documentName: 'a' }, { documentId: 'd2', documentName: 'b' }] },
    ok: ['d1'], failed: ['d2', 'ghost'], written: (fx) => docs(fx, (r) => r['documentName']), expected: ['One', 'd2'] },
  { path: '/v2/organizations/documents/move', body: { organizationId: O, documentIds: ['d1', 'ghost', 'd2', 'd2'], folderId: 'f' }, ok: ['d1'], failed: ['d2', 'ghost'],
    written: (fx) => docs(fx, (r) => r['folderId'] ?? null), expected: ['f', null] },
  { path: '/v2/organizations/documents/access/update', body: { organizationId: O, documentIds: ['d1', 'ghost', 'd2', 'd2'], accessType: 'restricted' }, ok: ['d1'], failed: ['d2', 'ghost'],
    written: (fx) => docs(fx, (r) => r['accessType']), expected: ['restricted', 'public'] },
  { path: '/v2/organizations/documents/access/disablestate/update', body: { organizationId: O, documentIds: ['d2', 'ghost', 'd1', 'd1'], disabled: true }, ok: ['d2'], failed: ['d1', 'ghost'],
    written: (fx) => docs(fx, (r) => r['disabled']), expected: [false, true] },
  { path: '/v2/organizations/folders/access/update', body: { organizationId: O, folderIds: ['f', 'ghost', 'x', 'x'], accessType: 'organizationPrivate' }, ok: ['f'], failed: ['ghost', 'x'],
    written: (fx) => read(fx, '/v2/organizations/folders/get', { organizationId: O, folderId: 'f' }).then((rows) => (rows as Array<{ accessType: string }>)[0]?.accessType), expected: 'organizationPrivate' },
  { path: '/v1/organizations/folders/update', body: { organizationId: O, folders: [{ folderId: 'f', folderName: 'F' }, { folderId: 'ghost', folderName: 'G' }, { folderId: 'f2', folderName: 'a' }, { folderId: 'f2', folderName: 'b' }] },
    ok: ['f'], failed: ['f2', 'ghost'], written: (fx) => read(fx, '/v2/organizations/folders/get', { organizationId: O, folderId: 'f' }).then((rows) => (rows as Array<{ folderName: string }>)[0]?.folderName), expected: 'F' },
  { path: '/v2/organizations/usergroups/add', body: { organizationId: O, organizationUserGroups: [{ groupId: 'g1' }, { groupId: 'gd' }, { groupId: 'gd' }] }, ok: ['g1'], failed: ['gd'],
    written: (fx) => read(fx, '/v2/organizations/usergroups/users/add', { organizationId: O, organizationUserGroupId: 'g1', userIds: ['u1'] }).then((map) => (map as Record<string, ItemResult>)['u1']?.success), expected: true },
  { path: '/v2/organizations/usergroups/users/add', body: { organizationId: O, organizationUserGroupId: 'g1', userIds: ['u2', 'ud', 'ud'] }, ok: ['u2'], failed: ['ud'],
    // Adding a member again is a no-op whose message says it is one: that reads membership without changing it.
    written: (fx) => read(fx, '/v2/organizations/usergroups/users/add', { organizationId: O, organizationUserGroupId: 'g1', userIds: ['u2'] }).then((map) => (map as Record<string, ItemResult>)['u2']?.message),
    expected: 'User is already in the group.' },
  { path: '/v2/organizations/usergroups/users/delete', body: { organizationId: O, organizationUserGroupId: 'g1', userIds: ['u2', 'ghost', 'u1', 'u1'] }, ok: ['u2'], failed: ['ghost', 'u1'],
    written: (fx) => read(fx, '/v2/organizations/usergroups/users/delete', { organizationId: O, organizationUserGroupId: 'g1', deleteAll: true }).then((map) => Object.keys(map as object)), expected: ['u1'] },
  { path: '/v2/users/add', body: { organizationId: O, users: [{ userId: 'u1' }, { userId: 'ud' }, { userId: 'ud' }] }, ok: ['u1'], failed: ['ud'],
    written: (fx) => read(fx, '/v2/users/get', { organizationId: O }).then((rows) => (rows as Array<{ userId: string }>).map((r) => r.userId)), expected: ['u1'] },
  { path: '/v2/users/update', body: { organizationId: O, users: [{ userId: 'u1', accessRole: 'viewer' }, { userId: 'ghost', name: 'G' }, { userId: 'ud', name: 'a' }, { userId: 'ud', name: 'b' }] }, ok: ['u1'], failed: ['ghost', 'ud'],
    written: (fx) => read(fx, '/v2/users/get', { organizationId: O }).then((rows) => (rows as Array<{ accessRole: string }>).map((r) => r.accessRole)), expected: ['viewer'] },
  { path: '/v2/auth/permissions/add', body: { user: { userId: 'p' }, permissions: { resources: [{ type: 'folder', id: 'f', organizationId: O }, { type: 'folder', id: 'ghost', organizationId: O }, { type: 'organization', id: O }, { type: 'organization', id: O }] } },
    ok: [`folder:${O}:f`], failed: [`folder:${O}:ghost`, `organization:${O}`], written: (fx) => read(fx, '/v2/users/get', { organizationId: O, folderId: 'f' }).then((rows) => (rows as Array<{ userId: string }>).map((r) => r.userId)), expected: ['p'] },
  { path: '/v2/auth/permissions/remove', body: { userId: 'p', permissions: { resources: [{ type: 'folder', id: 'f', organizationId: O }, { type: 'document', id: 'ghost', organizationId: O }, { type: 'organization', id: O }, { type: 'organization', id: O }] } },
    ok: [`folder:${O}:f`], failed: [`document:${O}:ghost`, `organization:${O}`], written: (fx) => read(fx, '/v2/users/get', { organizationId: O, folderId: 'f' }), expected: [] },
  { path: '/v2/users/delete', body: { organizationId: O, userIds: ['u1', 'ghost', 'ud', 'ud'] }, ok: ['u1'], failed: ['ghost', 'ud'],
    written: (fx) => read(fx, '/v2/users/get', { organizationId: O }), expected: [] },
  { path: '/v2/organizations/documents/delete', body: { organizationId: O, documentIds: ['d1', 'ghost', 'd2', 'd2'] }, ok: ['d1'], failed: ['d2', 'ghost'],
    written: (fx) => docs(fx, (r) => r['id']), expected: ['d2'] },
  { path: '/v2/organizations/delete', body: { organizationIds: [O, 'o2', 'ghost', 'dup', 'dup'] }, ok: [O, 'o2'], failed: ['dup', 'ghost'],
    written: (fx) => read(fx, '/v2/organizations/get', {}), expected: [] },
];

t.test('every bulk operation reports unknown and duplicate ids per item inside a success envelope and writes the valid items', async (t) => {
  const fx = await directoryFixture(t);
  for (const c of CASES) {
    const response = await fx.call<Record<string, ItemResult>>(c.path, c.body);
    t.equal(response.status, 200, c.path);
    const map = dataOf(t, response);
    t.same(outcome(map), { ok: [...c.ok].sort(), failed: [...c.failed].sort() }, `${c.path}: per-item outcome`);
    for (const id of c.failed) t.type(map[id]?.message, 'string', `${c.path}: ${id} says why`);
    t.same(await c.written(fx), c.expected, `${c.path}: valid items written`);
  }
});

t.test('deleting documents and folders removes the document data other modules keep', async (t) => {
  const fx = await directoryFixture(t);
  const { apiKey } = fx.credentials;
  const store = fx.server.services.store;
  await fx.call('/v2/organizations/folders/add', { organizationId: O, folders: [{ folderId: 'f' }, { folderId: 'g', parentFolderId: 'f' }] });
  await fx.call('/v2/organizations/documents/add', { organizationId: O, documents: [{ documentId: 'top' }, { documentId: 'kept' }] });
  await fx.call('/v2/organizations/documents/add', { organizationId: O, folderId: 'g', documents: [{ documentId: 'deep' }] });
  await store.transaction(() => {
    for (const doc of ['top', 'kept', 'deep']) {
      void store.binary(DB.docUpdates).put([apiKey, O, doc, 'e', 1], new Uint8Array([1]));
      void store.records(DB.annotations).put([apiKey, O, doc, 'a'], { annotationId: 'a' });
    }
  });
  const left = () => [...store.binary(DB.docUpdates).getKeys(), ...store.records(DB.annotations).getKeys()].map((key) => (key as string[])[2]).sort();
  await fx.call('/v2/organizations/documents/delete', { organizationId: O, documentIds: ['top'] });
  t.same(left(), ['deep', 'deep', 'kept', 'kept']);
  await fx.call('/v2/organizations/folders/delete', { organizationId: O, folderId: 'f' });
  t.same(left(), ['kept', 'kept']);
});

t.test('the directory survives a restart', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/documents/add', { organizationId: O, documents: [{ documentId: 'd' }] });
  await fx.call('/v2/users/add', { organizationId: O, users: [{ userId: 'u', accessRole: 'viewer' }] });
  const restarted = await fx.restart();
  const call = <T>(path: string, data: unknown) => restarted.api.call<T>(fx.credentials, path, data);
  t.same(dataOf(t, await call<Array<{ id: string }>>('/v2/organizations/documents/get', { organizationId: O })).map((row) => row.id), ['d']);
  t.same(dataOf(t, await call('/v2/users/get', { organizationId: O })), [{ userId: 'u', accessRole: 'viewer' }]);
});
