import t from 'tap';
import { DB } from '../../src/store/keys.js';
import { dataOf, directoryFixture, expectError, outcome, type ItemResult } from '../helpers/directory.js';

interface OrganizationRow {
  id: string;
  organizationName: string;
  disabled: boolean;
  [metadata: string]: unknown;
}

t.test('organizations add, get (paged), update and disable state, with per-item failures', async (t) => {
  const fx = await directoryFixture(t);
  const added = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/organizations/add', {
      organizations: [
        { organizationId: 'o1', organizationName: 'One', plan: 'pro' },
        { organizationId: 'o2' },
        { organizationId: 'o3' },
        { organizationId: 'o4' },
        { organizationId: 'o5' },
        { organizationId: 'twice' },
        { organizationId: 'twice' },
      ],
    }),
  );
  t.same(outcome(added), { ok: ['o1', 'o2', 'o3', 'o4', 'o5'], failed: ['twice'] });
  t.same(added['o1'], { success: true, id: 'o1', message: 'Added Successfully' });
  const again = dataOf(t, await fx.call<Record<string, ItemResult>>('/v1/organizations/add', { organizations: [{ organizationId: 'o1' }] }));
  t.equal(again['o1']?.code, 'already-exists');

  const seen: string[] = [];
  let pageToken: unknown;
  do {
    const page = await fx.call<OrganizationRow[]>('/v2/organizations/get', { pageSize: 2, ...(typeof pageToken === 'string' ? { pageToken } : {}) });
    seen.push(...dataOf(t, page).map((row) => row.id));
    pageToken = page.body.result?.['nextPageToken'];
  } while (typeof pageToken === 'string');
  t.same(seen, ['o1', 'o2', 'o3', 'o4', 'o5']);

  const updated = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/organizations/update', {
      organizations: [{ organizationId: 'o1', organizationName: 'Uno' }, { organizationId: 'ghost', organizationName: 'G' }],
    }),
  );
  t.same(outcome(updated), { ok: ['o1'], failed: ['ghost'] });
  expectError(t, await fx.call('/v2/organizations/update', { organizations: [{ organizationId: 'o1' }] }), 'INVALID_ARGUMENT', /data\.organizations\[0\]/);

  const disabled = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/access/disablestate/update', { organizationIds: ['o2'], disabled: true }));
  t.equal(disabled['o2']?.['disabled'], true);
  const rows = dataOf(t, await fx.call<OrganizationRow[]>('/v1/organizations/get', { organizationIds: ['o2', 'o1', 'nope'] }));
  t.same(rows.map((row) => [row.id, row.organizationName, row.disabled, row['plan']]), [
    ['o2', 'o2', true, undefined],
    ['o1', 'Uno', false, 'pro'],
  ]);
  expectError(t, await fx.call('/v2/organizations/get', { organizationIds: Array.from({ length: 31 }, (_, i) => `o${i}`) }), 'INVALID_ARGUMENT', /data\.organizationIds must have at most 30/);
});

t.test('deleting an organization leaves nothing of it behind, and leaves other organizations alone', async (t) => {
  const fx = await directoryFixture(t);
  const { apiKey } = fx.credentials;
  const store = fx.server.services.store;
  for (const org of ['gone', 'kept']) {
    await fx.call('/v2/organizations/add', { organizations: [{ organizationId: org }] });
    await fx.call('/v2/organizations/folders/add', { organizationId: org, folders: [{ folderId: 'f' }, { folderId: 'g', parentFolderId: 'f' }] });
    await fx.call('/v2/organizations/documents/add', { organizationId: org, folderId: 'g', documents: [{ documentId: 'd1' }, { documentId: 'd2' }] });
    await fx.call('/v2/users/add', { organizationId: org, users: [{ userId: 'u1', name: 'Ann' }] });
    await fx.call('/v2/users/add', { organizationId: org, documentId: 'd1', users: [{ userId: 'u2', accessRole: 'viewer' }] });
    await fx.call('/v2/organizations/usergroups/add', { organizationId: org, organizationUserGroups: [{ groupId: 'eng' }] });
    await fx.call('/v2/organizations/usergroups/users/add', { organizationId: org, organizationUserGroupId: 'eng', userIds: ['u1'] });
    await fx.call('/v2/auth/permissions/add', {
      organizationUserGroup: { organizationId: org, organizationUserGroupId: 'eng' },
      permissions: { resources: [{ type: 'folder', id: 'f', organizationId: org }] },
    });
    await fx.call('/v2/auth/permissions/add', { user: { userId: 'u3' }, permissions: { resources: [{ type: 'document', id: 'sync-only', organizationId: org, expiresAt: 4102444800 }] } });
    // Document data other modules own, including a document only the sync endpoint ever saw.
    await store.transaction(() => {
      for (const doc of ['d1', 'never-registered']) {
        void store.binary(DB.docUpdates).put([apiKey, org, doc, 'editor', 1], new Uint8Array([1, 2]));
        void store.binary(DB.docSnapshots).put([apiKey, org, doc, 'editor'], new Uint8Array([3]));
        void store.records(DB.editorDocMeta).put([apiKey, org, doc, 'editor'], { type: 'text' });
        void store.records(DB.annotations).put([apiKey, org, doc, 'a1'], { annotationId: 'a1' });
        void store.records(DB.presence).put([apiKey, org, doc, 'u1'], { userId: 'u1' });
      }
    });
  }
  const mentions = (org: string): string[] => {
    const found: string[] = [];
    for (const name of [DB.directory, DB.editorDocMeta, DB.annotations, DB.presence]) {
      for (const key of store.records<unknown>(name).getKeys()) {
        if (Array.isArray(key) && key[0] === apiKey && (key[1] === org || key[2] === org)) found.push(`${name} ${JSON.stringify(key)}`);
      }
    }
    for (const name of [DB.docUpdates, DB.docSnapshots]) {
      for (const key of store.binary(name).getKeys()) {
        if (Array.isArray(key) && key[0] === apiKey && key[1] === org) found.push(`${name} ${JSON.stringify(key)}`);
      }
    }
    return found;
  };
  const before = mentions('gone').length;
  t.ok(before > 30, `the organization holds entries everywhere (${before})`);

  const deleted = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/delete', { organizationIds: ['gone', 'never-was'] }));
  t.same(outcome(deleted), { ok: ['gone'], failed: ['never-was'] });
  t.equal(deleted['never-was']?.message, 'Organization does not exist');
  t.same(mentions('gone'), [], 'no key of the deleted organization is left in any database');
  t.equal(mentions('kept').length, before, 'the other organization is untouched');

  t.same(dataOf(t, await fx.call<OrganizationRow[]>('/v2/organizations/get', {})).map((row) => row.id), ['kept']);
  const recreated = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/add', { organizations: [{ organizationId: 'gone' }] }));
  t.equal(recreated['gone']?.success, true, 'the id can be used again');
  t.same(dataOf(t, await fx.call('/v2/organizations/documents/get', { organizationId: 'gone' })), [], 'and starts empty');
});
