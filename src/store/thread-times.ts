// Owns the key layout of the comment threads' indexes (DB.annotationTimes by time, DB.annotationIds by id), and keeping their rows with the thread rows when those are removed or moved.
import type { Key } from 'lmdb';
import type { RangeHolder } from './chunked-scan.js';
import type { Store } from './env.js';
import { DB } from './keys.js';

/** What the index needs of a stored thread (an AnnotationRecord, src/doc/annotations/model.ts). */
export interface TimedThread {
  readonly annotationId: string;
  readonly lastUpdated: number;
}

/**
 * A thread's index row: under its organization, in listing order (lastUpdated, then documentId, then annotationId), so
 * a page of the organization-wide listing is one range read from its token.
 */
export function threadTimeKey(apiKey: string, organizationId: string, documentId: string, thread: TimedThread): Key {
  return [apiKey, organizationId, thread.lastUpdated, documentId, thread.annotationId];
}

/**
 * A thread's row in the index by id: under its organization, by annotation id, then document (ids are unique within a
 * document only), so the listing of requested ids reads a row per id instead of every thread of the organization.
 */
export function threadIdKey(apiKey: string, organizationId: string, documentId: string, annotationId: string): Key {
  return [apiKey, organizationId, annotationId, documentId];
}

/**
 * The [apiKey, organizationId, documentId] of a key of either index (cluster fencing groups writes by document): the
 * document is the fourth element of both.
 */
export function documentOfThreadTime(key: Key | readonly Key[]): [unknown, unknown, unknown] | undefined {
  return Array.isArray(key) && key.length >= 4 ? [key[0], key[1], key[3]] : undefined;
}

/**
 * DB.annotations as `removeRangeInBatches` takes it, whose removal of a thread row takes the thread's index rows with
 * it, in the same transaction: every range removal of threads (a document, a folder's documents, an organization)
 * goes through this, so no index row outlives its thread.
 */
export function threadsWithTimes(store: Store): RangeHolder {
  const threads = store.records<TimedThread>(DB.annotations);
  const times = store.records<unknown>(DB.annotationTimes);
  const ids = store.records<unknown>(DB.annotationIds);
  return {
    getKeys: threads.getKeys.bind(threads),
    removeSync: (key: Key): boolean => {
      const thread = threads.get(key);
      const [apiKey, organizationId, documentId] = key as [string, string, string];
      if (thread !== undefined) {
        times.removeSync(threadTimeKey(apiKey, organizationId, documentId, thread));
        ids.removeSync(threadIdKey(apiKey, organizationId, documentId, thread.annotationId));
      }
      return threads.removeSync(key);
    },
  };
}

/**
 * What a removal of the range under `prefix` must take besides its other databases' rows: the threads with their index
 * rows and, for a whole organization ([apiKey, organizationId]), the organization's index ranges themselves.
 */
export function threadRanges(store: Store, prefix: readonly unknown[]): RangeHolder[] {
  return prefix.length === 2 ? [threadsWithTimes(store), store.records<unknown>(DB.annotationTimes), store.records<unknown>(DB.annotationIds)] : [threadsWithTimes(store)];
}

/** Only inside a transaction: the index rows of `thread`, moved from its document to `newDocumentId` (a document migration). */
export function moveThreadTime(store: Store, from: readonly [string, string, string], newDocumentId: string, thread: TimedThread): void {
  const [apiKey, organizationId, documentId] = from;
  const times = store.records<unknown>(DB.annotationTimes);
  const key = threadTimeKey(apiKey, organizationId, documentId, thread);
  const summary = times.get(key);
  if (summary !== undefined) {
    times.putSync(threadTimeKey(apiKey, organizationId, newDocumentId, thread), summary);
    times.removeSync(key);
  }
  const ids = store.records<unknown>(DB.annotationIds);
  const idKey = threadIdKey(apiKey, organizationId, documentId, thread.annotationId);
  const row = ids.get(idKey);
  if (row === undefined) return;
  ids.putSync(threadIdKey(apiKey, organizationId, newDocumentId, thread.annotationId), row);
  ids.removeSync(idKey);
}
