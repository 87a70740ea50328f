import t, { type Test } from 'tap';
import { dataOf, directoryFixture, expectError, outcome, type DirectoryFixture, type ItemResult } from '../helpers/directory.js';

interface DocumentRow {
  id: string;
  documentName: string;
  disabled: boolean;
  accessType: string;
  folderId?: string;
  [extra: string]: unknown;
}

const ORG = 'org-docs';
const ids = (from: number, count: number, prefix = 'doc'): string[] =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(from + i).padStart(5, '0')}`);

async function addDocuments(t: Test, fx: DirectoryFixture, documentIds: string[], extra: Record<string, unknown> = {}): Promise<void> {
  for (let start = 0; start < documentIds.length; start += 1000) {
    const batch = documentIds.slice(start, start + 1000).map((documentId) => ({ documentId }));
    const added = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/add', { organizationId: ORG, documents: batch, ...extra }));
    t.equal(outcome(added).failed.length, 0, 'every document of the batch was added');
  }
}



/** Pages through Get Documents; `between` runs after each page (to add documents mid-listing). */
async function listAll(t: Test, fx: DirectoryFixture, query: Record<string, unknown>, between: (page: number) => Promise<void> = async () => {}) {
  const seen: string[] = [];
  let pageToken: string | undefined;
  let pages = 0;
  do {
    const response = await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG, ...query, ...(pageToken === undefined ? {} : { pageToken }) });
    seen.push(...dataOf(t, response).map((row) => row.id));
    const token = response.body.result?.['pageToken'];
    pageToken = typeof token === 'string' ? token : undefined;
    pages += 1;
    await between(pages);
  } while (pageToken !== undefined);
  return { seen, pages };
}

t.test('Get Documents pages through 2,500 documents 1,000 at a time with no duplicates or gaps, also while documents are added', async (t) => {
  const fx = await directoryFixture(t);
  const initial = ids(0, 2500);
  await addDocuments(t, fx, initial);

  const plain = await listAll(t, fx, { pageSize: 1000 });
  t.equal(plain.pages, 3);
  t.same(plain.seen, initial, 'every document once, in the order added');

  const defaulted = await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG });
  t.equal(dataOf(t, defaulted).length, 1000, 'pageSize defaults to 1000');

  const late = ids(0, 150, 'late');
  const busy = await listAll(t, fx, { pageSize: 1000 }, async (page) => {
    if (page <= 2) await addDocuments(t, fx, late.slice((page - 1) * 75, page * 75));
  });
  t.equal(new Set(busy.seen).size, busy.seen.length, 'no document twice');
  t.same(busy.seen.slice(0, 2500), initial, 'no document that existed when the listing began is skipped');
  t.same(busy.seen.slice(2500), late, 'documents added between pages appear on later pages');
});

t.test('Get Documents refuses more than 30 documentIds and a token of another listing', async (t) => {
  const fx = await directoryFixture(t);
  await addDocuments(t, fx, ids(0, 40));
  const tooMany = await fx.call('/v2/organizations/documents/get', { organizationId: ORG, documentIds: ids(0, 31) });
  expectError(t, tooMany, 'INVALID_ARGUMENT', /data\.documentIds must have at most 30 items/);
  const some = await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG, documentIds: ['doc-00003', 'nope', 'doc-00001'] });
  t.same(dataOf(t, some).map((row) => row.id), ['doc-00003', 'doc-00001'], 'asked order; unknown ids left out');
  const first = await fx.call('/v2/organizations/documents/get', { organizationId: ORG, pageSize: 10 });
  const token = first.body.result?.['pageToken'];
  t.type(token, 'string');
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f' }] });
  const foreign = await fx.call('/v2/organizations/documents/get', { organizationId: ORG, folderId: 'f', pageToken: token });
  expectError(t, foreign, 'INVALID_ARGUMENT', /data\.pageToken/);
  expectError(t, await fx.call('/v2/organizations/documents/get', { organizationId: ORG, pageToken: 'garbage' }), 'INVALID_ARGUMENT', /data\.pageToken/);
  expectError(t, await fx.call('/v2/organizations/documents/get', {}), 'INVALID_ARGUMENT', /data\.organizationId is required/);
});

t.test('documents add, update, delete and move report unknown and duplicate ids per item and write the valid ones', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f1' }] });
  const added = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v1/organizations/documents/add', {
      organizationId: ORG,
      documents: [{ documentId: 'a', documentName: 'A', color: 'red' }, { documentId: 'b' }, { documentId: 'dup' }, { documentId: 'dup' }],
    }),
  );
  t.same(outcome(added), { ok: ['a', 'b'], failed: ['dup'] });
  t.equal(added['dup']?.code, 'duplicate');
  const again = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: 'a' }, { documentId: 'c' }] }));
  t.same(outcome(again), { ok: ['c'], failed: ['a'] });
  t.equal(again['a']?.code, 'already-exists');

  const updated = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/update', {
      organizationId: ORG,
      documents: [{ documentId: 'a', documentName: 'A2' }, { documentId: 'ghost', documentName: 'G' }],
    }),
  );
  t.same(outcome(updated), { ok: ['a'], failed: ['ghost'] });
  t.equal(updated['ghost']?.code, 'not-found');

  const moved = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/move', { organizationId: ORG, documentIds: ['a', 'ghost', 'b', 'b'], folderId: 'f1' }));
  t.same(outcome(moved), { ok: ['a'], failed: ['b', 'ghost'] });
  expectError(t, await fx.call('/v2/organizations/documents/move', { organizationId: ORG, documentIds: ['a'], folderId: 'nowhere' }), 'NOT_FOUND', /data\.folderId/);

  const inFolder = dataOf(t, await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG, folderId: 'f1' }));
  t.same(inFolder.map((row) => [row.id, row.documentName, row.color, row.folderId]), [['a', 'A2', 'red', 'f1']], 'metadata kept, folder filter applied');

  const deleted = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['a', 'ghost'] }));
  t.same(outcome(deleted), { ok: ['a'], failed: ['ghost'] });
  const rest = dataOf(t, await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG }));
  t.same(rest.map((row) => row.id), ['b', 'c']);
  t.same(rest[0], { id: 'b', documentName: 'b', disabled: false, accessType: 'public', createdAt: rest[0]?.createdAt, lastUpdated: rest[0]?.lastUpdated });
});

t.test('documents/delete naming an id twice fails it as a duplicate and keeps its data with its entry', async (t) => {
  const fx = await directoryFixture(t);
  await addDocuments(t, fx, ['twice', 'once']);
  for (const documentId of ['twice', 'once']) await fx.call('/v2/crdt/add', { organizationId: ORG, documentId, editorId: 'main', data: `text of ${documentId}`, type: 'text' });
  const deleted = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['twice', 'once', 'twice'] }));
  t.same(outcome(deleted), { ok: ['once'], failed: ['twice'] });
  t.equal(deleted['twice']?.code, 'duplicate');
  const rest = dataOf(t, await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG }));
  t.same(rest.map((row) => row.id), ['twice'], 'its entry stays');
  const text = async (documentId: string): Promise<unknown[] | undefined> =>
    (await fx.call<Array<{ data: unknown }>>('/v2/crdt/get', { organizationId: ORG, documentId, editorId: 'main' })).body.result?.data.map((row) => row.data);
  t.same(await text('twice'), ['text of twice'], 'and so does its data');
  t.same(await text('once'), [], 'the other is deleted with its data');
});

t.test('document access type and disable state are set per document and shown by Get Documents', async (t) => {
  const fx = await directoryFixture(t);
  await addDocuments(t, fx, ['x', 'y']);
  const access = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/access/update', { organizationId: ORG, documentIds: ['x', 'nope'], accessType: 'restricted' }));
  t.same(outcome(access), { ok: ['x'], failed: ['nope'] });
  t.equal(access['x']?.['accessType'], 'restricted');
  const disabled = dataOf(t, await fx.call<Record<string, ItemResult>>('/v2/organizations/documents/access/disablestate/update', { organizationId: ORG, documentIds: ['y'], disabled: true }));
  t.equal(disabled['y']?.['disabled'], true);
  const rows = dataOf(t, await fx.call<DocumentRow[]>('/v2/organizations/documents/get', { organizationId: ORG }));
  t.same(rows.map((row) => [row.id, row.accessType, row.disabled]), [['x', 'restricted', false], ['y', 'public', true]]);
  expectError(t, await fx.call('/v2/organizations/documents/access/update', { organizationId: ORG, documentIds: ['x'], accessType: 'secret' }), 'INVALID_ARGUMENT', /data\.accessType must be one of/);
});
