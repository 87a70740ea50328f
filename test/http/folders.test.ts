import t from 'tap';
import { dataOf, directoryFixture, expectError, outcome, type ItemResult } from '../helpers/directory.js';

interface FolderRow {
  folderId: string;
  folderName: string;
  parentFolderId: string;
  ancestors: string[];
  accessType: string;
  inheritAccessFromParent: boolean;
  subFolders?: FolderRow[];
}

const ORG = 'org-folders';

/** root > a > b > c, root > x; documents da in a, dc in c. */
const TREE = [
  { folderId: 'a', folderName: 'A' },
  { folderId: 'b', parentFolderId: 'a' },
  { folderId: 'c', parentFolderId: 'b' },
  { folderId: 'x' },
];

t.test('folders add in request order, report bad items per item, and get returns subfolders to maxDepth', async (t) => {
  const fx = await directoryFixture(t);
  const added = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v1/organizations/folders/add', {
      organizationId: ORG,
      folders: [...TREE, { folderId: 'orphan', parentFolderId: 'missing' }, { folderId: 'root' }, { folderId: 'd' }, { folderId: 'd' }],
    }),
  );
  t.same(outcome(added), { ok: ['a', 'b', 'c', 'x'], failed: ['d', 'orphan', 'root'] });
  t.same([added['orphan']?.code, added['root']?.code, added['d']?.code], ['not-found', 'invalid-argument', 'duplicate']);
  const again = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'a' }] }));
  t.equal(again['a']?.code, 'already-exists');

  const [a] = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG, folderId: 'a' }));
  t.equal(a?.folderName, 'A');
  t.same(a?.ancestors, ['root']);
  t.same(a?.subFolders?.map((f) => [f.folderId, f.subFolders]), [['b', undefined]], 'maxDepth defaults to immediate children');
  const [deep] = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG, folderId: 'a', maxDepth: 5 }));
  t.same(deep?.subFolders?.[0]?.subFolders?.[0]?.ancestors, ['root', 'a', 'b']);
  t.same(deep?.subFolders?.[0]?.subFolders?.[0]?.subFolders, []);
  const all = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG }));
  t.same(all.map((f) => f.folderId).sort(), ['a', 'b', 'c', 'x'], 'without folderId: every folder, flat');
  expectError(t, await fx.call('/v2/organizations/folders/get', { organizationId: ORG, folderId: 'nope' }), 'NOT_FOUND', /data\.folderId/);
});

t.test('moving a folder re-parents its whole subtree: ancestors recomputed, documents still found by folderId', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: TREE });
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'c', documents: [{ documentId: 'dc' }] });
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'b', documents: [{ documentId: 'db' }] });

  const moved = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v1/organizations/folders/update', {
      organizationId: ORG,
      folders: [
        { folderId: 'b', parentFolderId: 'x', folderName: 'B' },
        { folderId: 'x', parentFolderId: 'c' },
        { folderId: 'ghost', folderName: 'G' },
      ],
    }),
  );
  t.same(outcome(moved), { ok: ['b'], failed: ['ghost', 'x'] });
  t.match(moved['x']?.message, /own subtree/, 'x cannot move under c, which is now below x');
  t.equal(moved['b']?.['id'], 'b');

  const rows = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG }));
  const byId = new Map(rows.map((row) => [row.folderId, row]));
  t.same(byId.get('b')?.ancestors, ['root', 'x']);
  t.equal(byId.get('b')?.parentFolderId, 'x');
  t.equal(byId.get('b')?.folderName, 'B');
  t.same(byId.get('c')?.ancestors, ['root', 'x', 'b'], 'descendants carry the new ancestors');
  t.same(byId.get('a')?.ancestors, ['root'], 'the old parent is untouched');
  const [x] = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG, folderId: 'x', maxDepth: 2 }));
  t.same(x?.subFolders?.map((f) => [f.folderId, f.subFolders?.map((g) => g.folderId)]), [['b', ['c']]]);
  const [a] = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG, folderId: 'a' }));
  t.same(a?.subFolders, [], 'a no longer has children');

  const inC = dataOf(t, await fx.call<Array<{ id: string }>>('/v2/organizations/documents/get', { organizationId: ORG, folderId: 'c' }));
  t.same(inC.map((d) => d.id), ['dc']);
  const inB = dataOf(t, await fx.call<Array<{ id: string }>>('/v2/organizations/documents/get', { organizationId: ORG, folderId: 'b' }));
  t.same(inB.map((d) => d.id), ['db']);

  const self = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/folders/update', { organizationId: ORG, folders: [{ folderId: 'b', parentFolderId: 'b' }] }));
  t.equal(self['b']?.success, false, 'a folder cannot be its own parent');
  expectError(t, await fx.call('/v2/organizations/folders/update', { organizationId: ORG, folders: [{ folderId: 'b' }] }), 'INVALID_ARGUMENT', /data\.folders\[0\] must have at least 2/);
});

t.test('folder access types inherit from the parent until set, and back with inheritFromParent', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: TREE });
  const set = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/folders/access/update', { organizationId: ORG, folderIds: ['a', 'nope'], accessType: 'restricted' }));
  t.same(outcome(set), { ok: ['a'], failed: ['nope'] });
  const rows = () => fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG });
  const c = dataOf(t, await rows()).find((f) => f.folderId === 'c');
  t.same([c?.accessType, c?.inheritAccessFromParent], ['restricted', true]);
  await fx.call('/v2/organizations/folders/access/update', { organizationId: ORG, folderIds: ['a'], inheritFromParent: true });
  t.equal(dataOf(t, await rows()).find((f) => f.folderId === 'c')?.accessType, 'public', 'back to the API key default');
  expectError(t, await fx.call('/v2/organizations/folders/access/update', { organizationId: ORG, folderIds: ['a'] }), 'INVALID_ARGUMENT', /data\.accessType is required/);
});

t.test('deleting a folder deletes its subfolders and every document in them, nothing else', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: TREE });
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'c', documents: [{ documentId: 'dc' }] });
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'a', documents: [{ documentId: 'da' }] });
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'x', documents: [{ documentId: 'dx' }] });
  await fx.call('/v2/users/add', { organizationId: ORG, folderId: 'b', users: [{ userId: 'u1' }] });
  const deleted = await fx.call('/v2/organizations/folders/delete', { organizationId: ORG, folderId: 'b' });
  t.equal(dataOf(t, deleted), null);
  t.match(deleted.body.result?.message, /1 subfolder\(s\) and 1 document/);
  const folders = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG }));
  t.same(folders.map((f) => f.folderId).sort(), ['a', 'x']);
  const docs = dataOf(t, await fx.call<Array<{ id: string }>>('/v2/organizations/documents/get', { organizationId: ORG }));
  t.same(docs.map((d) => d.id), ['da', 'dx']);
  const [a] = dataOf(t, await fx.call<FolderRow[]>('/v2/organizations/folders/get', { organizationId: ORG, folderId: 'a' }));
  t.same(a?.subFolders, []);
  expectError(t, await fx.call('/v2/organizations/folders/delete', { organizationId: ORG, folderId: 'b' }), 'NOT_FOUND', /data\.folderId/);
});
