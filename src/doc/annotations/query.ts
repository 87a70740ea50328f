// Owns reading threads: Get filters, lastUpdated ordering, keyset page tokens, per-id lookups with nulls, and counts.
import { invalidArgument } from '../../errors.js';
import type { AnnotationRecord } from './model.js';

/** Filters of Get Comment Annotations (upstream notes 2.16); every given filter must match (AND). */
export interface AnnotationFilter {
  readonly locationIds?: readonly string[];
  readonly userIds?: readonly string[];
  readonly mentionedUserIds?: readonly string[];
  readonly resolvedBy?: string;
  readonly statusIds?: readonly string[];
  readonly updatedAfter?: number;
  readonly updatedBefore?: number;
  readonly createdAfter?: number;
  readonly createdBefore?: number;
}

export type Order = 'asc' | 'desc';

/** A thread with the document it belongs to, the unit of cross-document listing. */
export interface Row {
  readonly documentId: string;
  readonly record: AnnotationRecord;
}

export function matches(record: AnnotationRecord, filter: AnnotationFilter): boolean {
  if (filter.locationIds !== undefined && !filter.locationIds.includes(record.location?.id ?? '\u0000')) return false;
  if (filter.userIds !== undefined && !filter.userIds.includes(record.from.userId)) return false;
  if (filter.statusIds !== undefined && !filter.statusIds.includes(record.status.id)) return false;
  if (filter.resolvedBy !== undefined && record.resolvedByUserId !== filter.resolvedBy) return false;
  if (filter.updatedAfter !== undefined && !(record.lastUpdated > filter.updatedAfter)) return false;
  if (filter.updatedBefore !== undefined && !(record.lastUpdated < filter.updatedBefore)) return false;
  if (filter.createdAfter !== undefined && !(record.createdAt > filter.createdAfter)) return false;
  if (filter.createdBefore !== undefined && !(record.createdAt < filter.createdBefore)) return false;
  if (filter.mentionedUserIds !== undefined) {
    const mentioned = filter.mentionedUserIds;
    if (!record.comments.some((c) => c.taggedUserContacts.some((tag) => mentioned.includes(tag.userId)))) return false;
  }
  return true;
}

interface Cursor {
  readonly o: Order;
  readonly u: number;
  readonly d: string;
  readonly a: string;
}

/** A row's place in the listing; a page token holds the last one sent (or examined: src/doc/annotations/time-index.ts). */
export type SortKey = Omit<Cursor, 'o'>;

const keyOf = (row: Row): SortKey => ({ u: row.record.lastUpdated, d: row.documentId, a: row.record.annotationId });

/** Total order used for listing: lastUpdated, then documentId, then annotationId, so ties never reorder pages. */
function compare(a: SortKey, b: SortKey): number {
  if (a.u !== b.u) return a.u - b.u;
  if (a.d !== b.d) return a.d < b.d ? -1 : 1;
  if (a.a === b.a) return 0;
  return a.a < b.a ? -1 : 1;
}

/** Page tokens are keyset cursors (the last row's sort key), so inserts elsewhere never shift or repeat a page. */
export function encodePageToken(order: Order, last: Row): string {
  return encodeCursor(order, keyOf(last));
}

/** A token that resumes after `key`, a row sent or only examined. */
export function encodeCursor(order: Order, key: SortKey): string {
  const cursor: Cursor = { o: order, ...key };
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

export function decodePageToken(token: string, order: Order): SortKey {
  let cursor: unknown;
  try {
    cursor = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalidArgument('data.pageToken is not a token this server issued', { cause: error });
  }
  const c = cursor as Partial<Cursor> | null;
  if (c === null || typeof c !== 'object' || typeof c.u !== 'number' || typeof c.d !== 'string' || typeof c.a !== 'string') {
    throw invalidArgument('data.pageToken is not a token this server issued');
  }
  if (c.o !== order) throw invalidArgument(`data.pageToken was issued for order "${String(c.o)}"; send the same order`);
  return { u: c.u, d: c.d, a: c.a };
}

export interface Page {
  readonly rows: Row[];
  readonly nextPageToken?: string;
}

/**
 * One page of a listing in lastUpdated order (desc by default) after `pageToken`, built as rows come: it keeps only
 * the best `pageSize + 1` rows after the token (a heap, the worst on top), so a listing over an organization's
 * 100,000 threads holds and sorts a page's worth, not every thread it read.
 */
export class PageCollector {
  private readonly sign: number;
  private readonly after: SortKey | undefined;
  /** Max-heap by listing position: `heap[0]` is the row that would leave first. */
  private readonly heap: Row[] = [];

  constructor(
    private readonly order: Order,
    private readonly pageSize: number,
    pageToken: string | undefined,
  ) {
    this.sign = order === 'asc' ? 1 : -1;
    this.after = pageToken === undefined ? undefined : decodePageToken(pageToken, order);
  }

  /** Rows kept so far (at most pageSize + 1). */
  get kept(): number {
    return this.heap.length;
  }

  add(row: Row): void {
    const key = keyOf(row);
    if (this.after !== undefined && this.position(key, this.after) <= 0) return;
    const { heap } = this;
    const worst = heap[0];
    if (heap.length > this.pageSize) {
      if (worst === undefined || this.position(key, keyOf(worst)) >= 0) return;
      heap[0] = row;
      this.down(0);
      return;
    }
    heap.push(row);
    this.up(heap.length - 1);
  }

  /** The page, and a token when a row follows it. */
  page(): Page {
    const sorted = [...this.heap].sort((a, b) => this.position(keyOf(a), keyOf(b)));
    const rows = sorted.slice(0, this.pageSize);
    const last = rows[rows.length - 1];
    return sorted.length > this.pageSize && last !== undefined ? { rows, nextPageToken: encodePageToken(this.order, last) } : { rows };
  }

  /** Negative when `a` comes before `b` in the listing's order. */
  private position(a: SortKey, b: SortKey): number {
    return this.sign * compare(a, b);
  }

  private later(i: number, j: number): boolean {
    const a = this.heap[i];
    const b = this.heap[j];
    return a !== undefined && b !== undefined && this.position(keyOf(a), keyOf(b)) > 0;
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i];
    const b = this.heap[j];
    if (a === undefined || b === undefined) return;
    this.heap[i] = b;
    this.heap[j] = a;
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.later(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    for (;;) {
      let top = i;
      const left = 2 * i + 1;
      if (left < this.heap.length && this.later(left, top)) top = left;
      if (left + 1 < this.heap.length && this.later(left + 1, top)) top = left + 1;
      if (top === i) return;
      this.swap(i, top);
      i = top;
    }
  }
}

/**
 * Unread for a user: the thread has a comment by someone else created after the user's own latest comment in it
 * (the user has not answered since others last wrote). Threads only the user wrote in are read.
 */
export function isUnread(record: AnnotationRecord, userId: string): boolean {
  let ownLatest = -Infinity;
  for (const comment of record.comments) {
    if (comment.from.userId === userId) ownLatest = Math.max(ownLatest, comment.createdAt);
  }
  return record.comments.some((comment) => comment.from.userId !== userId && comment.createdAt > ownLatest);
}

export function countFor(records: Iterable<AnnotationRecord>, userId: string, statusIds: readonly string[] | undefined): { total: number; unread: number } {
  let total = 0;
  let unread = 0;
  for (const record of records) {
    if (statusIds !== undefined && !statusIds.includes(record.status.id)) continue;
    total++;
    if (isUnread(record, userId)) unread++;
  }
  return { total, unread };
}
