// Owns an organization's timestamped records (activity logs, notifications) with their time index: one row per record
// keyed [apiKey, organizationId, timestamp, id] holding what reads filter on, so a page reads only as far as it returns.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB, KEY_END, type DbName } from '../store/keys.js';
import { afterToken, encodeToken, page, type Page, type Timestamped } from './paging.js';

export interface Indexed extends Timestamped {
  readonly metadata: { readonly apiKey: string; readonly organizationId: string };
}

export interface PageOptions {
  readonly pageSize: number;
  readonly pageToken?: string | undefined;
  readonly order?: 'asc' | 'desc' | undefined;
}

/**
 * The records live in `records` under [apiKey, organizationId, id]; every write goes through `put` and `remove`, which
 * keep the index row beside the record in the same transaction. A page walks the index in time order from its token,
 * tests each row's summary (a few short fields, not the record), reads only the records that match, and stops one
 * past the page. Rows written before the index existed (schema 3 and older) are indexed once at start (`build`).
 */
export class TimeIndexed<R extends Indexed, S> {
  private readonly records: Database<R, Key>;
  private readonly index: Database<S, Key>;

  constructor(
    private readonly store: Store,
    names: { readonly records: DbName; readonly index: DbName },
    private readonly summarize: (record: R) => S,
  ) {
    this.records = store.records<R>(names.records);
    this.index = store.records<S>(names.index);
    this.builtKey = `timeIndexBuilt:${names.index}`;
  }

  private readonly builtKey: string;

  get(apiKey: string, organizationId: string, id: string): R | undefined {
    return this.records.get([apiKey, organizationId, id]);
  }

  /** Writes `record` and its index row; a stored record of the same id under another timestamp loses its old index row. */
  put(_tx: WriteTx, record: R): void {
    const { apiKey, organizationId } = record.metadata;
    const before = this.records.get([apiKey, organizationId, record.id]);
    if (before !== undefined && before.timestamp !== record.timestamp) this.index.removeSync(timeKey(before));
    this.records.putSync([apiKey, organizationId, record.id], record);
    this.index.putSync(timeKey(record), this.summarize(record));
  }

  remove(_tx: WriteTx, record: R): void {
    this.records.removeSync([record.metadata.apiKey, record.metadata.organizationId, record.id]);
    this.index.removeSync(timeKey(record));
  }

  /** Every record and index row of the organization; answers how many records went. */
  removeOrganization(_tx: WriteTx, apiKey: string, organizationId: string): number {
    let removed = 0;
    for (const key of Array.from(this.records.getKeys(prefixRange([apiKey, organizationId])))) {
      this.records.removeSync(key);
      removed++;
    }
    for (const key of Array.from(this.index.getKeys(prefixRange([apiKey, organizationId])))) this.index.removeSync(key);
    return removed;
  }

  /** Every record of the API key (all organizations), in key order: for scans that read every record anyway. */
  *all(apiKey: string, organizationId?: string): Generator<R> {
    const prefix = organizationId === undefined ? [apiKey] : [apiKey, organizationId];
    for (const { value } of this.records.getRange(prefixRange(prefix))) yield value;
  }

  /** The organization's records whose summary matches, oldest first; a record is read only when it matches. */
  *matching(apiKey: string, organizationId: string, matches: (summary: S) => boolean): Generator<R> {
    for (const record of this.walk(apiKey, organizationId, matches, 'asc', undefined)) yield record;
  }

  /**
   * One page in (timestamp, id) order, newest first unless `asc`, after the token (which names the last row sent);
   * it carries a token when a matching row follows. `ids`: only these records (read by id, not walked).
   */
  page(apiKey: string, organizationId: string, matches: (summary: S) => boolean, options: PageOptions, ids?: readonly string[]): Page<R> {
    if (ids !== undefined) {
      const rows: R[] = [];
      for (const id of new Set(ids)) {
        const record = this.get(apiKey, organizationId, id);
        if (record !== undefined && matches(this.summarize(record))) rows.push(record);
      }
      return page(rows, options);
    }
    const order = options.order === 'asc' ? 'asc' : 'desc';
    const after = options.pageToken === undefined ? undefined : afterToken(options.pageToken);
    const rows: R[] = [];
    for (const record of this.walk(apiKey, organizationId, matches, order, after)) {
      if (rows.length === options.pageSize) {
        const last = rows[rows.length - 1] as R;
        return { rows, pageToken: encodeToken(last) };
      }
      rows.push(record);
    }
    return { rows };
  }

  private *walk(apiKey: string, organizationId: string, matches: (summary: S) => boolean, order: 'asc' | 'desc', after: Timestamped | undefined): Generator<R> {
    const from = after === undefined ? undefined : [apiKey, organizationId, after.timestamp, after.id];
    const range =
      order === 'asc'
        ? { start: from ?? [apiKey, organizationId], end: [apiKey, organizationId, KEY_END] }
        : { start: from ?? [apiKey, organizationId, KEY_END], end: [apiKey, organizationId], reverse: true };
    for (const { key, value } of this.index.getRange(range)) {
      const [, , timestamp, id] = key as [string, string, number, string];
      // The token's own row (the range starts at it, inclusive) was sent on the page before.
      if (after !== undefined && timestamp === after.timestamp && id === after.id) continue;
      if (!matches(value)) continue;
      const record = this.get(apiKey, organizationId, id);
      // A record and its index row are written and removed together; a row without its record is skipped, not fatal.
      if (record !== undefined) yield record;
    }
  }

  /**
   * Indexes the records written before this index existed, once per data directory (marked in DB.meta, which is
   * node-local: each cluster node indexes its own cache, and the rows it writes replicate like any other, idempotently).
   * Answers how many records it indexed.
   */
  async build(): Promise<number> {
    const meta = this.store.records<unknown>(DB.meta);
    if (meta.get(this.builtKey) === true) return 0;
    return this.store.transaction(() => {
      let indexed = 0;
      for (const { value } of this.records.getRange({})) {
        this.index.putSync(timeKey(value), this.summarize(value));
        indexed++;
      }
      meta.putSync(this.builtKey, true);
      return indexed;
    });
  }
}

function timeKey(record: Indexed): Key {
  return [record.metadata.apiKey, record.metadata.organizationId, record.timestamp, record.id];
}

function prefixRange(prefix: readonly string[]): { start: Key; end: Key } {
  return { start: [...prefix], end: [...prefix, KEY_END] };
}
