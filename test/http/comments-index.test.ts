// Tests the organization-wide comment listing read from the threads' indexes (by time, by id): order, paging, rows read per page, the indexes kept through every delete and move, and built for older directories.
import type { Database, Key } from 'lmdb';
import t, { type Test } from 'tap';
import { documentOf } from '../../src/cluster/fence.js';
import type { AnnotationRecord } from '../../src/doc/annotations/model.js';
import { IDS_BUILT, PAGE_EXAMINE_ROWS, TIMES_BUILT, type ThreadSummary } from '../../src/doc/annotations/time-index.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { startTestServer } from '../helpers/server.js';
import { env, envFor, type Env } from './comments-env.js';

const ORG = 'org1';
const alice = { userId: 'alice', name: 'Alice' };
const bob = { userId: 'bob', name: 'Bob' };

interface Listed {
  readonly annotationId: string;
  readonly lastUpdated: number;
  readonly metadata: { readonly documentId: string };
}

/** One page of the organization-wide listing. */
async function page(e: Env, query: Record<string, unknown>): Promise<{ rows: Listed[]; token: string | undefined }> {
  const res = await e.call<Listed[]>('/v2/commentannotations/get', { organizationId: ORG, ...query });
  if (res.status !== 200) throw new Error(`listing failed: ${JSON.stringify(res.error)}`);
  return { rows: res.data, token: res.extra['nextPageToken'] as string | undefined };
}

/** Every page of a query, following the tokens; fails if a token repeats (a loop). */
async function allPages(e: Env, query: Record<string, unknown>): Promise<Listed[]> {
  const rows: Listed[] = [];
  const tokens = new Set<string>();
  let token: string | undefined;
  do {
    const got = await page(e, { ...query, ...(token === undefined ? {} : { pageToken: token }) });
    rows.push(...got.rows);
    token = got.token;
    if (token !== undefined && tokens.has(token)) throw new Error('a page token repeated');
    if (token !== undefined) tokens.add(token);
  } while (token !== undefined);
  return rows;
}

const idOf = (row: Listed): string => `${row.metadata.documentId}/${row.annotationId}`;

/** Listing order: lastUpdated, then documentId, then annotationId (ids here are ASCII, where JS and LMDB agree). */
function sorted(rows: readonly Listed[], order: 'asc' | 'desc'): string[] {
  const sign = order === 'asc' ? 1 : -1;
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...rows].sort((a, b) => sign * (a.lastUpdated - b.lastUpdated || cmp(a.metadata.documentId, b.metadata.documentId) || cmp(a.annotationId, b.annotationId))).map(idOf);
}

/** Every thread row has exactly its two index rows (keys from the thread, each naming the row), and no other index row exists. */
function indexMatchesThreads(t: Test, store: Store, what: string): void {
  const expected = new Map<string, unknown>();
  const expectedIds = new Map<string, unknown>();
  for (const { key, value } of store.records<AnnotationRecord>(DB.annotations).getRange({})) {
    const [apiKey, organizationId, documentId, row] = key as [string, string, string, number | string];
    expected.set(JSON.stringify([apiKey, organizationId, value.lastUpdated, documentId, value.annotationId]), row);
    expectedIds.set(JSON.stringify([apiKey, organizationId, value.annotationId, documentId]), row);
  }
  const found = new Map<string, unknown>();
  for (const { key, value } of store.records<ThreadSummary>(DB.annotationTimes).getRange({})) found.set(JSON.stringify(key), value.row);
  t.same([...found].sort(), [...expected].sort(), `${what}: one index row per thread, and none besides (${expected.size} threads)`);
  const foundIds = new Map<string, unknown>();
  for (const { key, value } of store.records<unknown>(DB.annotationIds).getRange({})) foundIds.set(JSON.stringify(key), value);
  t.same([...foundIds].sort(), [...expectedIds].sort(), `${what}: one id row per thread, and none besides`);
}

/** Counts the rows a listing reads of the threads and of their index, through the store's own database objects. */
function countReads(t: Test, store: Store): { threads: number; index: number } {
  const counts = { threads: 0, index: 0 };
  const wrapRange = <V>(db: Database<V, Key>, count: () => void): void => {
    const getRange = db.getRange.bind(db);
    db.getRange = ((options?: Parameters<typeof getRange>[0]) => {
      const rows = getRange(options);
      return (function* () {
        for (const row of rows) {
          count();
          yield row;
        }
      })();
    }) as unknown as typeof db.getRange;
    t.teardown(() => {
      db.getRange = getRange;
    });
  };
  const threads = store.records<AnnotationRecord>(DB.annotations);
  wrapRange(threads, () => counts.threads++);
  wrapRange(store.records<unknown>(DB.annotationIds), () => counts.index++);
  wrapRange(store.records<ThreadSummary>(DB.annotationTimes), () => counts.index++);
  const get = threads.get.bind(threads);
  threads.get = ((key: Key) => {
    counts.threads++;
    return get(key);
  }) as typeof threads.get;
  t.teardown(() => {
    threads.get = get;
  });
  return counts;
}

async function addThreads(e: Env, documentId: string, threads: ReadonlyArray<Record<string, unknown>>, organizationId = ORG): Promise<void> {
  const res = await e.call('/v2/commentannotations/add', { organizationId, documentId, commentAnnotations: threads });
  if (res.status !== 200) throw new Error(`add failed: ${JSON.stringify(res.error)}`);
}

t.test('pages in both orders hold what sorting every thread gives, ties included, for any page size', async (t) => {
  const e = await env(t);
  for (const documentId of ['doc-c', 'doc-a', 'doc-b']) {
    // Four lastUpdated values over 36 threads: ties across documents and within one.
    await addThreads(e, documentId, Array.from({ length: 12 }, (_, i) => ({ annotationId: `t${(i * 7) % 12}`, lastUpdated: 1000 + (i % 4), commentData: [{ from: alice }] })));
  }
  await addThreads(e, 'doc-a', [{ annotationId: 'other-org', commentData: [{ from: alice }] }], 'org2');
  const every = await allPages(e, { pageSize: 1000 });
  t.equal(every.length, 36, 'every thread of the organization, none of another');
  for (const order of ['desc', 'asc'] as const) {
    const expected = sorted(every, order);
    for (const pageSize of [1, 5, 7, 36, 1000]) {
      const rows = await allPages(e, { pageSize, order });
      t.same(rows.map(idOf), expected, `${order}, pages of ${pageSize}`);
    }
    const exact = await page(e, { pageSize: 36, order });
    t.equal(exact.token, undefined, `${order}: a page that ends with the last thread carries no token`);
  }
  t.same((await page(e, {})).rows.map(idOf), sorted(every, 'desc'), 'desc is the default order');
  const grouped = await e.call<Record<string, Listed[]>>('/v2/commentannotations/get', { organizationId: ORG, pageSize: 5, groupByDocumentId: true });
  t.same(Object.values(grouped.data).flat().map(idOf).sort(), sorted(every, 'desc').slice(0, 5).sort(), 'grouped by document: the same page');
  const wrongOrder = await e.call('/v2/commentannotations/get', { organizationId: ORG, pageSize: 5, order: 'asc', pageToken: (await page(e, { pageSize: 5 })).token });
  t.equal(wrongOrder.error?.status, 'INVALID_ARGUMENT', 'a token of the other order is refused');
});

t.test('a page reads a page of rows, not the organization; a filter few threads match reads a bounded number per page', async (t) => {
  const e = await env(t);
  const documents = Math.ceil((PAGE_EXAMINE_ROWS + 1000) / 1000);
  for (let d = 0; d < documents; d++) {
    const commentData = (i: number) => [{ from: i === 500 ? bob : alice, ...(i === 700 ? { taggedUserContacts: [{ text: '@carol', userId: 'carol', contact: { userId: 'carol', email: 'carol@example.com', name: 'Carol' } }] } : {}) }];
    await addThreads(e, `doc-${d}`, Array.from({ length: 1000 }, (_, i) => ({ annotationId: `t${i}`, lastUpdated: 10_000 + d * 1000 + i, commentData: commentData(i) })));
  }
  const total = documents * 1000;
  const reads = countReads(t, e.server.server.services.store);

  const first = await page(e, { pageSize: 20 });
  t.same(first.rows.map((r) => r.lastUpdated), Array.from({ length: 20 }, (_, i) => 10_000 + total - 1 - i), 'the newest 20');
  t.ok(reads.index <= 21 && reads.threads <= 21, `a page of 20 out of ${total} threads read ${reads.index} index rows and ${reads.threads} threads`);
  reads.index = reads.threads = 0;
  const second = await page(e, { pageSize: 20, pageToken: first.token });
  t.equal(second.rows[0]?.lastUpdated, 10_000 + total - 21, 'the next page starts after the token');
  t.ok(reads.index <= 21 && reads.threads <= 21, `and so did the next one: ${reads.index} and ${reads.threads}`);

  reads.index = reads.threads = 0;
  const windowed = await page(e, { pageSize: 1000, updatedAfter: 12_000, updatedBefore: 12_011, order: 'asc' });
  t.same(windowed.rows.map((r) => r.lastUpdated), Array.from({ length: 10 }, (_, i) => 12_001 + i), 'updatedAfter and updatedBefore are exclusive');
  t.ok(reads.index <= 10, `they narrow the walk: ${reads.index} index rows read`);

  // No thread matches: each page stops after PAGE_EXAMINE_ROWS index rows, without reading a thread, and resumes.
  reads.index = reads.threads = 0;
  const none = await page(e, { userIds: ['nobody'] });
  t.same(none.rows, [], 'nothing matched in the rows this page examined');
  t.ok(none.token !== undefined, 'but the walk has not reached the end: a token resumes it');
  t.equal(reads.index, PAGE_EXAMINE_ROWS, 'it examined PAGE_EXAMINE_ROWS index rows');
  t.equal(reads.threads, 0, 'and read no thread: the summaries fail the filter');
  const rest = await page(e, { userIds: ['nobody'], pageToken: none.token });
  t.same(rest, { rows: [], token: undefined }, 'the next page examines the rest and ends the listing');

  reads.index = reads.threads = 0;
  const bobs = await allPages(e, { userIds: ['bob'], pageSize: 2 });
  t.same(bobs.map((r) => r.lastUpdated), Array.from({ length: documents }, (_, d) => 10_000 + (documents - 1 - d) * 1000 + 500), "every bob thread, newest first, over pages bounded in rows");
  // Each page reads its matches and the one after (to know a page follows), which the next page reads again.
  t.ok(reads.threads <= documents + Math.ceil(documents / 2), `only the threads whose summary matched were read (${reads.threads} for ${documents})`);
  const tagged = await allPages(e, { mentionedUserIds: ['carol'], pageSize: 1000 });
  t.equal(tagged.length, documents, 'a filter the summary cannot test reads the threads and still finds every match');
});

t.test('paging through the organization while threads are added, changed and deleted lists each untouched thread once', async (t) => {
  const e = await env(t);
  for (const documentId of ['doc-a', 'doc-b', 'doc-c', 'doc-d']) {
    await addThreads(e, documentId, Array.from({ length: 10 }, (_, i) => ({ annotationId: `t${i}`, lastUpdated: 100 + i * 4 + documentId.charCodeAt(4) - 97, commentData: [{ from: alice }] })));
  }
  const start = sorted(await allPages(e, { pageSize: 1000 }), 'desc');
  const seen: string[] = [];
  const touched = new Set<string>();
  let token: string | undefined;
  let round = 0;
  do {
    const got = await page(e, { pageSize: 6, ...(token === undefined ? {} : { pageToken: token }) });
    seen.push(...got.rows.map(idOf));
    token = got.token;
    round++;
    const unseen = start.filter((id) => !seen.includes(id) && !touched.has(id));
    const [deleted, changed] = [unseen[unseen.length - 1], unseen[0]];
    if (deleted === undefined || changed === undefined || deleted === changed) continue;
    // A new thread lands before the cursor (newest); a deleted one is gone; a changed one moves to the front.
    await addThreads(e, 'doc-a', [{ annotationId: `new-${round}`, commentData: [{ from: bob }] }]);
    const [delDoc, delId] = deleted.split('/') as [string, string];
    await e.call('/v2/commentannotations/delete', { organizationId: ORG, documentId: delDoc, annotationIds: [delId] });
    const [chDoc, chId] = changed.split('/') as [string, string];
    await e.call('/v2/commentannotations/update', { organizationId: ORG, documentId: chDoc, annotationIds: [chId], updatedData: { priority: { id: 'P1', name: 'High', color: '#f00', lightColor: '#fee' } } });
    // And a thread already listed changes: it moves to the front too, behind the cursor.
    const listed = seen[0];
    if (listed !== undefined) {
      const [doc, id] = listed.split('/') as [string, string];
      await e.call('/v2/commentannotations/comments/add', { organizationId: ORG, documentId: doc, annotationId: id, commentData: [{ from: bob }] });
    }
    touched.add(deleted).add(changed);
  } while (token !== undefined);
  t.ok(round > 3, `paged ${round} times with changes between pages`);
  t.equal(new Set(seen).size, seen.length, 'no thread is listed twice');
  t.same(seen.filter((id) => !touched.has(id)), start.filter((id) => !touched.has(id)), 'every thread not deleted or changed while paging is listed, once, in order');
  t.notOk(seen.some((id) => id.includes('new-')), 'threads added meanwhile are newer than the cursor');
  indexMatchesThreads(t, e.server.server.services.store, 'after the changes');
});

t.test('the index rows go with their threads: thread, location, document, folder, migration, user erasure and organization', async (t) => {
  const e = await env(t, { docIdleUnloadMs: 3_600_000 });
  const ok = async (path: string, data: unknown): Promise<void> => {
    const res = await e.call(path, data);
    t.ok(res.status === 200 || res.status === 202, `${path} ${JSON.stringify(res.error ?? '')}`);
  };
  const { store, jobs } = e.server.server.services;
  await ok('/v2/organizations/add', { organizations: [{ organizationId: ORG }, { organizationId: 'org2' }] });
  await ok('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f' }] });
  await ok('/v2/organizations/documents/add', { organizationId: ORG, documents: ['d1', 'd2', 'd3'].map((documentId) => ({ documentId })) });
  await ok('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'f', documents: [{ documentId: 'f1' }, { documentId: 'f2' }] });
  for (const documentId of ['d1', 'd2', 'd3', 'f1', 'f2']) {
    await addThreads(e, documentId, [
      { annotationId: 'a', location: { id: 'slide-1' }, commentData: [{ from: alice }] },
      { annotationId: 'b', location: { id: 'slide-2' }, commentData: [{ from: alice }, { from: { userId: 'dora' } }] },
      { annotationId: 'c', commentData: [{ from: bob }] },
    ]);
  }
  await addThreads(e, 'd1', [{ annotationId: 'x', commentData: [{ from: alice }] }], 'org2');
  const listed = async (): Promise<string[]> => (await allPages(e, { pageSize: 4 })).map(idOf).sort();
  indexMatchesThreads(t, store, 'written');

  await ok('/v2/commentannotations/delete', { organizationId: ORG, documentId: 'd1', annotationIds: ['a'] });
  indexMatchesThreads(t, store, 'a thread deleted');
  await ok('/v1/organizations/documents/locations/data/delete', { apiKey: e.creds.apiKey, authToken: e.creds.authToken, organizationId: ORG, documentId: 'd1', location: { id: 'slide-2' } });
  indexMatchesThreads(t, store, 'a location deleted');
  t.same(await listed(), ['d1/c', 'd2/a', 'd2/b', 'd2/c', 'd3/a', 'd3/b', 'd3/c', 'f1/a', 'f1/b', 'f1/c', 'f2/a', 'f2/b', 'f2/c']);

  await ok('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['d2'] });
  indexMatchesThreads(t, store, 'a document deleted');
  await ok('/v2/organizations/folders/delete', { organizationId: ORG, folderId: 'f' });
  indexMatchesThreads(t, store, 'a folder deleted');
  t.same(await listed(), ['d1/c', 'd3/a', 'd3/b', 'd3/c']);

  // The comment owner's own removal (it catches threads the drained actors wrote after the directory's range removal).
  await addThreads(e, 'unregistered', [{ annotationId: 'u', commentData: [{ from: alice }] }]);
  await e.server.server.services.collab.deleteDocumentData({ apiKey: e.creds.apiKey, organizationId: ORG, documentId: 'unregistered' });
  indexMatchesThreads(t, store, "the comment owner's removal of a document");
  await ok('/v2/organizations/documents/migrate', { organizationId: ORG, documentId: 'd3', newDocumentId: 'd4' });
  await jobs.idle();
  indexMatchesThreads(t, store, 'a document migrated');
  t.same(await listed(), ['d1/c', 'd4/a', 'd4/b', 'd4/c'], 'its threads are listed under the new id');

  await ok('/v2/users/data/delete', { userId: 'dora' });
  await jobs.idle();
  indexMatchesThreads(t, store, "a user's data erased (threads rewritten)");
  t.same(await listed(), ['d1/c', 'd4/a', 'd4/b', 'd4/c']);

  await ok('/v2/organizations/delete', { organizationIds: [ORG] });
  indexMatchesThreads(t, store, 'an organization deleted');
  t.same(await listed(), []);
  t.equal([...store.records(DB.annotationTimes).getKeys({})].length, 1, "another organization's index row stays");
  t.equal([...store.records(DB.annotationIds).getKeys({})].length, 1, "and its id row");
  t.equal(
    documentOf([DB.annotationTimes, [e.creds.apiKey, ORG, 5, 'd1', 'a']]),
    documentOf([DB.annotations, [e.creds.apiKey, ORG, 'd1', 1]]),
    'in a cluster, an index row is fenced with its document',
  );
  t.equal(documentOf([DB.annotationIds, [e.creds.apiKey, ORG, 'a', 'd1']]), documentOf([DB.annotations, [e.creds.apiKey, ORG, 'd1', 1]]), 'and an id row');
});

t.test('a directory of schema 7 (threads, no index) gets its index at the first start, a thread under its schema-2 key included', async (t) => {
  const e = await env(t);
  await addThreads(e, 'doc-a', Array.from({ length: 5 }, (_, i) => ({ annotationId: `a${i}`, lastUpdated: 100 + i, commentData: [{ from: alice }] })));
  await addThreads(e, 'doc-b', Array.from({ length: 5 }, (_, i) => ({ annotationId: `b${i}`, lastUpdated: 200 + i, commentData: [{ from: alice }] })));
  const before = sorted(await allPages(e, { pageSize: 1000 }), 'desc');
  const dataDir = e.server.config.dataDir;
  await e.server.server.stop();

  // As a schema-7 build left it: the threads without index rows or the marker, and one thread under its old id key.
  const old = Store.open(dataDir);
  await old.transaction(() => {
    const times = old.records<ThreadSummary>(DB.annotationTimes);
    for (const key of [...times.getKeys({})]) times.removeSync(key);
    const ids = old.records<unknown>(DB.annotationIds);
    for (const key of [...ids.getKeys({})]) ids.removeSync(key);
    const threads = old.records<AnnotationRecord>(DB.annotations);
    const numbered = [e.creds.apiKey, ORG, 'doc-b', 3];
    const record = threads.get(numbered);
    if (record === undefined) throw new Error('thread b2 not found');
    threads.removeSync(numbered);
    threads.putSync([e.creds.apiKey, ORG, 'doc-b', record.annotationId], record);
    const meta = old.records<unknown>(DB.meta);
    meta.removeSync(TIMES_BUILT);
    meta.removeSync(IDS_BUILT);
    meta.putSync('schemaVersion', 7);
  });
  await old.close();

  const upgraded = envFor(await startTestServer(t, {}, dataDir), e.creds);
  const { store } = upgraded.server.server.services;
  t.equal(store.foundSchemaVersion, 7, 'opened as schema 7');
  indexMatchesThreads(t, store, 'built at start');
  t.same((await allPages(upgraded, { pageSize: 3 })).map(idOf), before, 'the listing reads every thread, in order');
  await upgraded.call('/v2/commentannotations/update', { organizationId: ORG, documentId: 'doc-b', annotationIds: ['b2'], updatedData: { priority: { id: 'P1', name: 'High', color: '#f00', lightColor: '#fee' } } });
  indexMatchesThreads(t, store, 'the old-key thread moved to its number with its change, and its index row with it');
  t.equal((await page(upgraded, { pageSize: 1 })).rows[0]?.annotationId, 'b2', 'and it is listed first now');
  t.equal(store.records<unknown>(DB.meta).get(TIMES_BUILT), true, 'the build is marked done');
  t.equal(store.records<unknown>(DB.meta).get(IDS_BUILT), true, 'both builds');
  const byId = await upgraded.call<Array<Listed | null>>('/v2/commentannotations/get', { organizationId: ORG, annotationIds: ['b2', 'a1'] });
  t.same(byId.data.map((row) => row?.annotationId), ['b2', 'a1'], 'threads are found by id after the build');
});

t.test('requested ids read a row and a thread per id and document, not the organization', async (t) => {
  const e = await env(t);
  const documents = 6;
  for (let d = 0; d < documents; d++) {
    await addThreads(e, `doc-${d}`, Array.from({ length: 1000 }, (_, i) => ({ annotationId: `t${d}-${i}`, commentData: [{ from: i === 7 ? bob : alice }] })));
  }
  // One id in two documents (ids are unique within a document only), and one in another organization.
  await addThreads(e, 'doc-x', [{ annotationId: 't0-7', commentData: [{ from: bob }] }]);
  await addThreads(e, 'doc-a', [{ annotationId: 't1-1', commentData: [{ from: alice }] }], 'org2');
  const reads = countReads(t, e.server.server.services.store);
  const ids = ['t3-999', 'nope', 't1-1', 't0-7', 't5-0'];
  const res = await e.call<Array<Listed | null>>('/v2/commentannotations/get', { organizationId: ORG, annotationIds: ids });
  t.same(res.data.map((row) => (row === null ? null : idOf(row))), ['doc-3/t3-999', null, 'doc-1/t1-1', 'doc-x/t0-7', 'doc-5/t5-0'], 'one entry per id, in request order, null when missing');
  t.equal(res.extra['nextPageToken'], undefined, 'no paging');
  t.ok(reads.index <= 5 && reads.threads <= 5, `${ids.length} ids over ${documents * 1000} threads read ${reads.index} id rows and ${reads.threads} threads`);
  const filtered = await e.call<Array<Listed | null>>('/v2/commentannotations/get', { organizationId: ORG, annotationIds: ['t2-7', 't2-8'], userIds: ['bob'] });
  t.same(filtered.data.map((row) => row?.annotationId ?? null), ['t2-7', null], 'other filters still exclude');
});
