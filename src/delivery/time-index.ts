// Owns timestamped records listed newest first (activity logs, notifications, webhook messages) with their time index:
// one row per record keyed [apiKey, scope, time, id] holding what reads filter on, so a page reads only as far as it returns.
import type { Database, Key } from 'lmdb';
import { pageMatches, removeRangeInBatches, scanChunked, scanRange, type MatchPage } from '../store/chunked-scan.js';
import type { Store, WriteTx } from '../store/env.js';
import { KEY_END, type DbName } from '../store/keys.js';
import { afterToken, encodeToken, page, type Page, type Timestamped } from './paging.js';

/** What a record is listed under: its API key and its organization (or endpoint). */
export type Scope = readonly [apiKey: string, scope: string];

export interface PageOptions {
  readonly pageSize: number;
  readonly pageToken?: string | undefined;
  readonly order?: 'asc' | 'desc' | undefined;
  /**
   * Index rows the page examines at most (undefined: until the page is full or the range ends). Past it the page ends
   * with what it found and a token naming the last row examined, so a filter few rows match costs the caller more
   * pages, not the event loop a walk of the whole scope.
   */
  readonly examineAtMost?: number | undefined;
}

/**
 * Index rows one page of activity logs or notifications examines at most (`OrganizationRecords.page`), as for the
 * organization-wide comment listing (src/doc/annotations/time-index.ts), in chunks of CHUNK_ROWS with a turn of the
 * event loop between them: a filter nothing matched walked every row of the organization in one call, ~120 ms of the
 * event loop at 200,000 rows (bench/README.md, "Twentieth session: noisy neighbours, second pass").
 */
export const RECORD_PAGE_EXAMINE_ROWS = 5000;

export interface TimeIndexOptions<R, S> {
  readonly records: DbName;
  readonly index: DbName;
  /** The fields reads filter on, kept in the index row. */
  readonly summarize: (record: R) => S;
  /** The scope a stored record is listed under (to index the rows older than the index). */
  readonly scopeOf: (record: R, key: Key) => Scope;
  /** The record's time, in ms (`timestamp`, a message's `createdAt`). */
  readonly timeOf: (record: R) => number;
  /**
   * The record an index row stands for when it has none (written with `putImplied`), or undefined when there is none
   * to make. Without it, such a row is skipped like any row without its record.
   */
  readonly implied?: (key: readonly [apiKey: string, scope: string, time: number, id: string], summary: S) => R | undefined;
}

/**
 * The records live in `records` under [apiKey, scope, id]; every write goes through `put` and `remove`, which keep the
 * index row beside the record in the same transaction. A page walks the index in time order from its token, tests
 * each row's summary (a few short fields, not the record), reads only the records that match, and stops one past the
 * page. Rows written before the index existed (schema 3 and older) are indexed once at start (`build`).
 */
export class TimeIndexed<R extends { readonly id: string }, S> {
  private readonly records: Database<R, Key>;
  private readonly index: Database<S, Key>;
  private readonly builtKey: string;
  private readonly summarize: (record: R) => S;
  private readonly timeOf: (record: R) => number;

  constructor(
    private readonly store: Store,
    private readonly options: TimeIndexOptions<R, S>,
  ) {
    this.records = store.records<R>(options.records);
    this.index = store.records<S>(options.index);
    this.builtKey = `timeIndexBuilt:${options.index}`;
    this.summarize = options.summarize;
    this.timeOf = options.timeOf;
  }

  get([apiKey, scope]: Scope, id: string): R | undefined {
    return this.records.get([apiKey, scope, id]);
  }

  /** Whether the scope holds a record of this id (no decoding). */
  has([apiKey, scope]: Scope, id: string): boolean {
    return this.records.doesExist([apiKey, scope, id]);
  }

  /** Writes `record` and its index row; a stored record of the same id at another time loses its old index row. */
  put(_tx: WriteTx, [apiKey, scope]: Scope, record: R): void {
    const before = this.records.get([apiKey, scope, record.id]);
    if (before !== undefined && this.timeOf(before) !== this.timeOf(record)) this.index.removeSync([apiKey, scope, this.timeOf(before), record.id]);
    this.records.putSync([apiKey, scope, record.id], record);
    this.index.putSync([apiKey, scope, this.timeOf(record), record.id], this.summarize(record));
  }

  /**
   * Writes `record` and its index row without reading what is stored: only for an id no stored record has (the
   * records of an event at its raise, whose id the raise made). `put`'s read was ~1.5 µs a record on the comment path.
   */
  putNew(_tx: WriteTx, [apiKey, scope]: Scope, record: R): void {
    this.records.putSync([apiKey, scope, record.id], record);
    this.index.putSync([apiKey, scope, this.timeOf(record), record.id], this.summarize(record));
  }

  /**
   * Writes the index row of a record the caller knows is not stored (planning checked), and not the record: reads
   * make it from the row (`TimeIndexOptions.implied`) until a `put` writes it.
   */
  putImplied(_tx: WriteTx, [apiKey, scope]: Scope, record: R): void {
    this.index.putSync([apiKey, scope, this.timeOf(record), record.id], this.summarize(record));
  }

  /** The summary of the index row of the record `id` at `time`, if there is one (a record or an implied one). */
  indexed([apiKey, scope]: Scope, time: number, id: string): S | undefined {
    return this.index.get([apiKey, scope, time, id]);
  }

  remove(_tx: WriteTx, [apiKey, scope]: Scope, record: R): void {
    this.records.removeSync([apiKey, scope, record.id]);
    this.index.removeSync([apiKey, scope, this.timeOf(record), record.id]);
  }

  /** Every record and index row of the scope; answers how many records went. */
  removeScope(_tx: WriteTx, [apiKey, scope]: Scope): number {
    let removed = 0;
    for (const key of Array.from(this.records.getKeys(prefixRange([apiKey, scope])))) {
      this.records.removeSync(key);
      removed++;
    }
    for (const key of Array.from(this.index.getKeys(prefixRange([apiKey, scope])))) this.index.removeSync(key);
    return removed;
  }

  /**
   * Every record and index row of the scope, in batches of bounded transactions (src/store/chunked-scan.ts): an
   * organization may hold millions. Index rows first, so a page read meanwhile lists only records still there.
   * Answers how many records went.
   */
  async removeScopeInBatches([apiKey, scope]: Scope): Promise<number> {
    await removeRangeInBatches(this.store, [this.index], [apiKey, scope]);
    return removeRangeInBatches(this.store, [this.records], [apiKey, scope]);
  }

  /**
   * Removes the scope's records older than `before` whose summary says `removable`, oldest first, at most `limit`;
   * answers how many went. Reads only the index rows before `before`.
   */
  removeBefore(_tx: WriteTx, [apiKey, scope]: Scope, before: number, removable: (summary: S) => boolean, limit: number): number {
    let removed = 0;
    for (const { key, value } of Array.from(this.index.getRange({ start: [apiKey, scope], end: [apiKey, scope, before] }))) {
      if (removed >= limit) break;
      if (!removable(value)) continue;
      this.records.removeSync([apiKey, scope, (key as [string, string, number, string])[3]]);
      this.index.removeSync(key);
      removed++;
    }
    return removed;
  }

  /**
   * The first `limit` records of the API key (all scopes, or one) after `after` that `pick` turns into an item, read in
   * chunks with event-loop turns between them (src/store/chunked-scan.ts): for GDPR export and erase, which look for
   * one user, and document deletion, which looks for one document.
   */
  pageOfAll<T>(apiKey: string, after: Key | undefined, limit: number, pick: (key: Key, record: R) => T | undefined, scope?: string): Promise<MatchPage<T>> {
    return pageMatches(this.records, scope === undefined ? [apiKey] : [apiKey, scope], after, limit, pick);
  }

  /** Every record of the API key (all scopes), or of one scope, in key order: for scans that read every record anyway. */
  *all(apiKey: string, scope?: string): Generator<R> {
    for (const { value } of this.records.getRange(prefixRange(scope === undefined ? [apiKey] : [apiKey, scope]))) yield value;
  }

  /** The scope's records whose summary matches, oldest first; a record is read only when it matches. */
  matching(scope: Scope, matches: (summary: S) => boolean): Iterable<R> {
    return this.walk(scope, matches, 'asc', undefined);
  }

  /**
   * The ids of the scope's records whose summary matches, oldest first (the order of `matching`), reading CHUNK_ROWS
   * index rows between turns of the event loop: a filtered delete tests every row of an organization that may hold
   * millions, and holds only the ids it found.
   */
  async matchingIds([apiKey, within]: Scope, matches: (summary: S) => boolean): Promise<string[]> {
    const ids: string[] = [];
    await scanChunked(this.index, [apiKey, within], undefined, (key, summary) => {
      if (matches(summary)) ids.push(String((key as [string, string, number, string])[3]));
      return true;
    });
    return ids;
  }

  /**
   * One page in (timestamp, id) order, newest first unless `asc`, after the token (which names the last row sent);
   * it carries a token when a matching row follows. `ids`: only these records (read by id, not walked). The walk reads
   * CHUNK_ROWS index rows between turns of the event loop, and ends after `examineAtMost` of them with a token naming
   * the last one examined (the page may then be short, or empty).
   */
  async page(scope: Scope, matches: (summary: S) => boolean, options: PageOptions, ids?: readonly string[]): Promise<Page<R>> {
    if (ids !== undefined) {
      const rows: Array<{ record: R; id: string; timestamp: number }> = [];
      for (const id of new Set(ids)) {
        const record = this.get(scope, id);
        if (record !== undefined && matches(this.summarize(record))) rows.push({ record, id, timestamp: this.timeOf(record) });
      }
      const found = page(rows, options);
      return { rows: found.rows.map((row) => row.record), ...(found.pageToken === undefined ? {} : { pageToken: found.pageToken }) };
    }
    const order = options.order === 'asc' ? 'asc' : 'desc';
    const after = options.pageToken === undefined ? undefined : afterToken(options.pageToken);
    const range = walkRange(scope, order, after);
    const examineAtMost = options.examineAtMost ?? Infinity;
    const rows: R[] = [];
    let examined = 0;
    let lastExamined: Timestamped | undefined;
    let pageToken: string | undefined;
    // The range starts at the token's row, inclusive (skipped below).
    await scanRange(this.index, range, (key, value) => {
      const [, , time, id] = key as [string, string, number, string];
      // The token's own row was sent, or examined, on the page before.
      if (after !== undefined && time === after.timestamp && id === after.id) return true;
      // Another row follows the last one examined: the token resumes after it.
      if (examined === examineAtMost && lastExamined !== undefined) {
        pageToken = encodeToken(lastExamined);
        return false;
      }
      examined++;
      lastExamined = { timestamp: time, id };
      if (!matches(value)) return true;
      // A record and its index row are written and removed together; a row without its record is implied
      // (`putImplied`), or was removed or moved to another time between two chunks and is skipped, not fatal.
      const record = this.get(scope, id) ?? this.options.implied?.([scope[0], scope[1], time, id], value);
      if (record === undefined || this.timeOf(record) !== time) return true;
      if (rows.length === options.pageSize) {
        const last = rows[rows.length - 1] as R;
        pageToken = encodeToken({ timestamp: this.timeOf(last), id: last.id });
        return false;
      }
      rows.push(record);
      return true;
    });
    return pageToken === undefined ? { rows } : { rows, pageToken };
  }

  private *walk(scope: Scope, matches: (summary: S) => boolean, order: 'asc' | 'desc', after: Timestamped | undefined): Generator<R> {
    const [apiKey, within] = scope;
    for (const { key, value } of this.index.getRange(walkRange(scope, order, after))) {
      const [, , time, id] = key as [string, string, number, string];
      // The token's own row (the range starts at it, inclusive) was sent on the page before.
      if (after !== undefined && time === after.timestamp && id === after.id) continue;
      if (!matches(value)) continue;
      // A record and its index row are written and removed together; a row without its record is implied
      // (`putImplied`) or skipped, not fatal.
      const record = this.get(scope, id) ?? this.options.implied?.([apiKey, within, time, id], value);
      if (record !== undefined) yield record;
    }
  }

  /** Indexes the records written before this index existed (schema 3 and older), once (`Store.backfillOnce`). */
  build(): Promise<number> {
    return this.store.backfillOnce(this.builtKey, () => {
      let indexed = 0;
      for (const { key, value } of this.records.getRange({})) {
        const [apiKey, scope] = this.options.scopeOf(value, key);
        this.index.putSync([apiKey, scope, this.timeOf(value), value.id], this.summarize(value));
        indexed++;
      }
      return indexed;
    });
  }
}

/** The scope's index rows in time order from the token's row (inclusive: the walks skip it), or from the start. */
function walkRange([apiKey, within]: Scope, order: 'asc' | 'desc', after: Timestamped | undefined): { start: Key; end: Key; reverse?: boolean } {
  const from = after === undefined ? undefined : [apiKey, within, after.timestamp, after.id];
  return order === 'asc'
    ? { start: from ?? [apiKey, within], end: [apiKey, within, KEY_END] }
    : { start: from ?? [apiKey, within, KEY_END], end: [apiKey, within], reverse: true };
}

function prefixRange(prefix: readonly string[]): { start: Key; end: Key } {
  return { start: [...prefix], end: [...prefix, KEY_END] };
}
