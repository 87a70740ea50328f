// Owns the organization-wide comment listing read from the threads' indexes: the summary a time-index row holds, the rows
// moved with each thread change, the indexes built for older directories, a page read by time and threads read by id.
import type { Database, Key } from 'lmdb';
import type { DocumentKey } from '../../document-key.js';
import { scanRange } from '../../store/chunked-scan.js';
import type { Store } from '../../store/env.js';
import { DB, KEY_END } from '../../store/keys.js';
import { threadIdKey, threadTimeKey } from '../../store/thread-times.js';
import type { AnnotationRecord } from './model.js';
import { decodePageToken, encodeCursor, encodePageToken, matches, type AnnotationFilter, type Order, type Page, type Row, type SortKey } from './query.js';

/** What a thread's index row holds: where its row is, and the fields filters test, so a row that fails one is not read. */
export interface ThreadSummary {
  /** The last element of the thread row's key: its annotation number, or its id for a row schema 1 or 2 wrote. */
  readonly row: number | string;
  readonly createdAt: number;
  readonly userId: string;
  readonly statusId: string;
  readonly locationId?: string;
  readonly resolvedBy?: string;
}

/** DB.meta marker: the threads stored before the index (schema 7 and older) have their index rows. */
export const TIMES_BUILT = 'annotationTimesBuilt';

/** DB.meta marker: the threads stored before the index by id (schema 9 and older) have their id rows. */
export const IDS_BUILT = 'annotationIdsBuilt';

/**
 * Index rows one page examines at most. A filter few threads match would otherwise walk the whole organization for
 * one page (every thread of it, when none matches); past this many rows the page ends with what it found and a token
 * that resumes after the last row examined. A few ms of the event loop, in chunks of CHUNK_ROWS with turns between.
 */
export const PAGE_EXAMINE_ROWS = 5000;

export function summarize(record: AnnotationRecord, row: number | string): ThreadSummary {
  return {
    row,
    createdAt: record.createdAt,
    userId: record.from.userId,
    statusId: record.status.id,
    ...(record.location === undefined ? {} : { locationId: record.location.id }),
    ...(record.resolvedByUserId === undefined ? {} : { resolvedBy: record.resolvedByUserId }),
  };
}

/** `matches` (query.ts) on the fields a summary holds; `mentionedUserIds` is tested on the thread itself. */
function summaryMatches(summary: ThreadSummary, filter: AnnotationFilter): boolean {
  if (filter.locationIds !== undefined && !filter.locationIds.includes(summary.locationId ?? '\u0000')) return false;
  if (filter.userIds !== undefined && !filter.userIds.includes(summary.userId)) return false;
  if (filter.statusIds !== undefined && !filter.statusIds.includes(summary.statusId)) return false;
  if (filter.resolvedBy !== undefined && summary.resolvedBy !== filter.resolvedBy) return false;
  if (filter.createdAfter !== undefined && !(summary.createdAt > filter.createdAfter)) return false;
  if (filter.createdBefore !== undefined && !(summary.createdAt < filter.createdBefore)) return false;
  return true;
}

/** A thread's two index rows: by time (DB.annotationTimes) and by id (DB.annotationIds). */
export interface ThreadIndexes {
  readonly times: Database<ThreadSummary, Key>;
  readonly ids: Database<number | string, Key>;
}

export function threadIndexes(store: Store): ThreadIndexes {
  return { times: store.records<ThreadSummary>(DB.annotationTimes), ids: store.records<number | string>(DB.annotationIds) };
}

/**
 * Only inside the transaction that writes the thread's change: its index rows follow it (moved, rewritten or removed).
 * The id row names where the thread's row is, so it is written when the thread is new or its row moves (`rowMoved`: a
 * schema-2 row going to its number), not at every change.
 */
export function writeThreadTime(indexes: ThreadIndexes, ref: DocumentKey, before: AnnotationRecord | undefined, after: AnnotationRecord | undefined, rowMoved = false): void {
  const { apiKey, organizationId, documentId } = ref;
  const { times, ids } = indexes;
  if (before !== undefined && (after === undefined || after.lastUpdated !== before.lastUpdated)) times.removeSync(threadTimeKey(apiKey, organizationId, documentId, before));
  if (after !== undefined) times.putSync(threadTimeKey(apiKey, organizationId, documentId, after), summarize(after, after.annotationNumber));
  const thread = after ?? before;
  if (thread === undefined) return;
  const idKey = threadIdKey(apiKey, organizationId, documentId, thread.annotationId);
  if (after === undefined) ids.removeSync(idKey);
  else if (before === undefined || rowMoved) ids.putSync(idKey, after.annotationNumber);
}

/**
 * Writes the index row of every thread stored before the index existed (schema 7 and older), once per directory, in
 * one transaction at start, before the server listens (`Store.backfillOnce`). Answers how many it wrote.
 */
export function buildThreadTimes(store: Store): Promise<number> {
  return store.backfillOnce(TIMES_BUILT, () => {
    const times = store.records<ThreadSummary>(DB.annotationTimes);
    let indexed = 0;
    for (const { key, value } of store.records<AnnotationRecord>(DB.annotations).getRange({})) {
      const [apiKey, organizationId, documentId, row] = key as [string, string, string, number | string];
      times.putSync(threadTimeKey(apiKey, organizationId, documentId, value), summarize(value, row));
      indexed++;
    }
    return indexed;
  });
}

/**
 * Writes the id row of every thread stored before the index by id existed (schema 9 and older), once per directory, in
 * one transaction at start, before the server listens (`Store.backfillOnce`). Answers how many it wrote.
 */
export function buildThreadIds(store: Store): Promise<number> {
  return store.backfillOnce(IDS_BUILT, () => {
    const ids = store.records<number | string>(DB.annotationIds);
    let indexed = 0;
    for (const { key, value } of store.records<AnnotationRecord>(DB.annotations).getRange({})) {
      const [apiKey, organizationId, documentId, row] = key as [string, string, string, number | string];
      ids.putSync(threadIdKey(apiKey, organizationId, documentId, value.annotationId), row);
      indexed++;
    }
    return indexed;
  });
}

/**
 * The organization's threads with these ids, read through the index by id: a row and a thread per id and document
 * that has it, whatever the organization holds. `visit` gets each in index order (by id, then document).
 */
export function threadsById(store: Store, apiKey: string, organizationId: string, annotationIds: readonly string[], visit: (documentId: string, record: AnnotationRecord) => void): void {
  const { ids } = threadIndexes(store);
  const threads = store.records<AnnotationRecord>(DB.annotations);
  for (const annotationId of new Set(annotationIds)) {
    const prefix = [apiKey, organizationId, annotationId];
    for (const { key, value } of ids.getRange({ start: prefix, end: [...prefix, KEY_END] })) {
      const documentId = (key as [string, string, string, string])[3];
      const record = threads.get([apiKey, organizationId, documentId, value]);
      if (record !== undefined && record.annotationId === annotationId) visit(documentId, record);
    }
  }
}

export interface IndexedQuery extends AnnotationFilter {
  readonly organizationId: string;
  readonly order: Order;
  readonly pageSize: number;
  readonly pageToken?: string | undefined;
}

/** The index range of a query, from its token (or the start of the order) to the end, narrowed by updatedAfter/Before. */
function rangeOf(apiKey: string, query: IndexedQuery, after: SortKey | undefined): { start: Key; end: Key; reverse: boolean } {
  const org = [apiKey, query.organizationId];
  const { updatedAfter, updatedBefore } = query;
  const cursor = after === undefined ? undefined : [...org, after.u, after.d, after.a];
  if (query.order === 'desc') {
    // Reverse: `start` is the top (exclusive, below), `end` the exclusive bottom; bounds on lastUpdated are exclusive too.
    const top = updatedBefore !== undefined && (after === undefined || after.u >= updatedBefore) ? [...org, updatedBefore] : (cursor ?? [...org, KEY_END]);
    return { start: top, end: updatedAfter === undefined ? org : [...org, updatedAfter, KEY_END], reverse: true };
  }
  const bottom = updatedAfter !== undefined && (after === undefined || after.u <= updatedAfter) ? [...org, updatedAfter, KEY_END] : (cursor ?? org);
  return { start: bottom, end: updatedBefore === undefined ? [...org, KEY_END] : [...org, updatedBefore], reverse: false };
}

/**
 * One page of the organization's threads in listing order after the token, walked in the time index: for each index row
 * its summary is tested, and the thread is read only when it passes, so an unfiltered page reads `pageSize + 1` rows of
 * each, not every thread of the organization. The walk stops one match past the page (the token names the page's last
 * row), at the end of the range, or after PAGE_EXAMINE_ROWS rows (the token names the last row examined: the page may
 * be short, even empty, and still carry a token). `inFolder`: only threads of these documents.
 */
export async function indexedPage(store: Store, apiKey: string, query: IndexedQuery, inFolder?: ReadonlySet<string>): Promise<Page> {
  const times = store.records<ThreadSummary>(DB.annotationTimes);
  const threads = store.records<AnnotationRecord>(DB.annotations);
  const after = query.pageToken === undefined ? undefined : decodePageToken(query.pageToken, query.order);
  const range = rangeOf(apiKey, query, after);
  const rows: Row[] = [];
  let nextPageToken: string | undefined;
  const cut = await scanRange(times, { ...range, exclusiveStart: true }, (key, value) => {
    const [, , u, d, a] = key as [string, string, number, string, string];
    if ((inFolder !== undefined && !inFolder.has(d)) || !summaryMatches(value, query)) return true;
    const record = threads.get([apiKey, query.organizationId, d, value.row]);
    // Written and removed together; but a chunk after a turn of the event loop may find the thread changed since its
    // row was read: it is listed at its new place (a thread updated between pages moves), not here.
    if (record === undefined || record.lastUpdated !== u || record.annotationId !== a || !matches(record, query)) return true;
    const lastOfPage = rows[rows.length - 1];
    if (rows.length === query.pageSize && lastOfPage !== undefined) {
      nextPageToken = encodePageToken(query.order, lastOfPage);
      return false;
    }
    rows.push({ documentId: d, record });
    return true;
  }, PAGE_EXAMINE_ROWS);
  if (nextPageToken !== undefined) return { rows, nextPageToken };
  if (cut === undefined) return { rows };
  // PAGE_EXAMINE_ROWS examined and more follow: the token names the last row examined.
  const [, , u, d, a] = cut as [string, string, number, string, string];
  return { rows, nextPageToken: encodeCursor(query.order, { u, d, a }) };
}
