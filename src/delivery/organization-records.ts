// Owns what the organization-scoped record stores share (activity logs, notifications): reads and writes through their time index.
import type { Key } from 'lmdb';
import { keyFits } from '../limits.js';
import type { MatchPage } from '../store/chunked-scan.js';
import type { Store, WriteTx } from '../store/env.js';
import type { DbName } from '../store/keys.js';
import type { Page } from './paging.js';
import { RECORD_PAGE_EXAMINE_ROWS, TimeIndexed, type PageOptions, type Scope } from './time-index.js';

/** A record listed under its organization by its `timestamp`. */
export interface OrganizationRecord {
  readonly id: string;
  readonly timestamp: number;
  readonly metadata: { readonly apiKey: string; readonly organizationId: string };
}

/** How a store's filter reads: the test on an index row's summary, and the ids it names (read by id, not walked). */
export interface FilterReading<F, S> {
  readonly matcher: (filter: F) => (summary: S) => boolean;
  readonly ids: (filter: F) => readonly string[] | undefined;
}

/** As long as every id recorded from an event: a 4-character prefix (`act_`, `ntf_`) and the event id's 32 hex digits. */
const EVENT_RECORD_ID_SHAPE = `xxx_${'0'.repeat(32)}`;

/**
 * Whether every key a record made from an event takes fits (`keyFits`): its row [apiKey, organizationId, id] and its
 * time-index row [apiKey, organizationId, time, id], the longer. What the recorders answer as `EventRecorder.bounded`.
 */
export function eventRecordKeysFit(apiKey: string, organizationId: string): boolean {
  return keyFits([apiKey, organizationId, EVENT_RECORD_ID_SHAPE], 1);
}

function scopeOf(record: OrganizationRecord): Scope {
  return [record.metadata.apiKey, record.metadata.organizationId];
}

/** Records of an organization, each with its time-index row; the stores add their own rules on top. */
export class OrganizationRecords<R extends OrganizationRecord, S, F extends { readonly organizationId: string }> {
  private readonly rows: TimeIndexed<R, S>;

  constructor(
    protected readonly store: Store,
    names: { readonly records: DbName; readonly index: DbName },
    summarize: (record: R) => S,
    private readonly filters: FilterReading<F, S>,
  ) {
    this.rows = new TimeIndexed(store, { ...names, summarize, scopeOf, timeOf: (record) => record.timestamp });
  }

  get(apiKey: string, organizationId: string, id: string): R | undefined {
    return this.rows.get([apiKey, organizationId], id);
  }

  /** Idempotent by id: the same record written again (a delivery retried after a crash) leaves one row and one index row. */
  put(tx: WriteTx, record: R): void {
    this.rows.put(tx, scopeOf(record), record);
  }

  /** A record whose id no stored record has (an event's, at its raise): written without reading first (`TimeIndexed.putNew`). */
  putNew(tx: WriteTx, record: R): void {
    this.rows.putNew(tx, scopeOf(record), record);
  }

  remove(tx: WriteTx, record: R): void {
    this.rows.remove(tx, scopeOf(record), record);
  }

  /**
   * One page of the organization's records in time order (src/delivery/time-index.ts), examining at most
   * RECORD_PAGE_EXAMINE_ROWS index rows: past them it ends, maybe short, with a token to go on from.
   */
  page(apiKey: string, filter: F, options: PageOptions): Promise<Page<R>> {
    return this.rows.page([apiKey, filter.organizationId], this.filters.matcher(filter), { examineAtMost: RECORD_PAGE_EXAMINE_ROWS, ...options }, this.filters.ids(filter));
  }

  /** Every matching record of the organization, oldest first. */
  async find(apiKey: string, filter: F): Promise<R[]> {
    const ids = this.filters.ids(filter);
    if (ids !== undefined) return (await this.page(apiKey, filter, { pageSize: ids.length, order: 'asc' })).rows;
    return Array.from(this.rows.matching([apiKey, filter.organizationId], this.filters.matcher(filter)));
  }

  /**
   * The ids of the matching records of the organization, oldest first, as `find` lists them: read by id when the
   * filter names ids, otherwise from the time index in chunks with event-loop turns between them.
   */
  async findIds(apiKey: string, filter: F): Promise<string[]> {
    if (this.filters.ids(filter) !== undefined) return (await this.find(apiKey, filter)).map((record) => record.id);
    return this.rows.matchingIds([apiKey, filter.organizationId], this.filters.matcher(filter));
  }

  /** A page of the records of the API key (or of one organization) `pick` keeps, read in chunks (GDPR, document deletion). */
  pageOfAll<T>(apiKey: string, after: Key | undefined, limit: number, pick: (key: Key, record: R) => T | undefined, organizationId?: string): Promise<MatchPage<T>> {
    return this.rows.pageOfAll(apiKey, after, limit, pick, organizationId);
  }

  /** Every record of the API key, or of one organization. */
  all(apiKey: string, organizationId?: string): Iterable<R> {
    return this.rows.all(apiKey, organizationId);
  }

  /** Every record of the organization, in batches of bounded transactions; answers how many went. */
  removeOrganization(apiKey: string, organizationId: string): Promise<number> {
    return this.rows.removeScopeInBatches([apiKey, organizationId]);
  }

  /** Indexes by time the records written before schema 4, once. */
  buildIndex(): Promise<number> {
    return this.rows.build();
  }
}
