// Owns activity-log records: DB.activities and their time index (spec 2.12, upstream 2.19), with the immutability rule.
import type { UserRef } from '../doc/annotations/model.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { Page } from './paging.js';
import { TimeIndexed, type PageOptions, type Scope } from './time-index.js';

export type FeatureType = 'comment' | 'reaction' | 'recorder' | 'crdt' | 'custom';

export interface ActivityRecord {
  readonly id: string;
  readonly featureType: FeatureType;
  readonly actionType: string;
  readonly actionUser: UserRef;
  readonly targetEntityId?: string;
  readonly targetSubEntityId?: string;
  readonly changes?: Record<string, { from: unknown; to: unknown }>;
  readonly entityData?: unknown;
  readonly entityTargetData?: unknown;
  readonly displayMessageTemplate: string;
  readonly displayMessageTemplateData: Record<string, unknown>;
  readonly actionIcon?: string;
  readonly metadata: { readonly apiKey: string; readonly documentId: string; readonly organizationId: string };
  readonly timestamp: number;
  /** `event`: recorded by Plait from a domain event; `api`: added over REST. */
  readonly origin: 'event' | 'api';
  /** Recorded from an event while the activity config had `immutable` true: no update, no delete. */
  readonly immutable: boolean;
}

export interface ActivityFilter {
  readonly organizationId: string;
  readonly documentId?: string;
  readonly targetEntityId?: string;
  readonly featureTypes?: readonly string[];
  readonly actionTypes?: readonly string[];
  readonly userId?: string;
  readonly activityIds?: readonly string[];
}

export type ItemOutcome = 'done' | 'not-found' | 'immutable';

/** What an activity read filters on, kept in its time-index row. */
export interface ActivitySummary {
  readonly documentId: string;
  readonly targetEntityId?: string;
  readonly featureType: string;
  readonly actionType: string;
  readonly userId: string;
}

function scopeOf(record: ActivityRecord): Scope {
  return [record.metadata.apiKey, record.metadata.organizationId];
}

function summarize(record: ActivityRecord): ActivitySummary {
  return {
    documentId: record.metadata.documentId,
    ...(record.targetEntityId === undefined ? {} : { targetEntityId: record.targetEntityId }),
    featureType: record.featureType,
    actionType: record.actionType,
    userId: record.actionUser.userId,
  };
}

/** Whether an activity with this summary passes the filter (`activityIds` aside: those are read by id). */
function matcher(filter: ActivityFilter): (summary: ActivitySummary) => boolean {
  return (s) =>
    (filter.documentId === undefined || s.documentId === filter.documentId) &&
    (filter.targetEntityId === undefined || s.targetEntityId === filter.targetEntityId) &&
    (filter.featureTypes === undefined || filter.featureTypes.includes(s.featureType)) &&
    (filter.actionTypes === undefined || filter.actionTypes.includes(s.actionType)) &&
    (filter.userId === undefined || s.userId === filter.userId);
}

export class ActivityStore {
  private readonly rows: TimeIndexed<ActivityRecord, ActivitySummary>;

  constructor(private readonly store: Store) {
    this.rows = new TimeIndexed(store, { records: DB.activities, index: DB.activityTimes, summarize, scopeOf, timeOf: (record) => record.timestamp });
  }

  get(apiKey: string, organizationId: string, id: string): ActivityRecord | undefined {
    return this.rows.get([apiKey, organizationId], id);
  }

  put(tx: WriteTx, record: ActivityRecord): void {
    this.rows.put(tx, scopeOf(record), record);
  }

  /** All or nothing: an immutable id among them refuses the whole add (returned), nothing written. */
  async addAll(records: readonly ActivityRecord[]): Promise<string | undefined> {
    return this.store.transaction((tx) => {
      for (const record of records) {
        if (this.get(record.metadata.apiKey, record.metadata.organizationId, record.id)?.immutable === true) return record.id;
      }
      for (const record of records) this.put(tx, record);
      return undefined;
    });
  }

  /** One page of the organization's activities in time order (src/delivery/time-index.ts). */
  page(apiKey: string, filter: ActivityFilter, options: PageOptions): Page<ActivityRecord> {
    return this.rows.page([apiKey, filter.organizationId], matcher(filter), options, filter.activityIds);
  }

  /** Every matching activity of the organization, oldest first. */
  find(apiKey: string, filter: ActivityFilter): ActivityRecord[] {
    if (filter.activityIds !== undefined) return this.page(apiKey, filter, { pageSize: filter.activityIds.length, order: 'asc' }).rows;
    return Array.from(this.rows.matching([apiKey, filter.organizationId], matcher(filter)));
  }

  /** Every activity of the API key, or of one organization: GDPR export and erase, document deletion. */
  all(apiKey: string, organizationId?: string): Iterable<ActivityRecord> {
    return this.rows.all(apiKey, organizationId);
  }

  remove(tx: WriteTx, record: ActivityRecord): void {
    this.rows.remove(tx, scopeOf(record), record);
  }

  removeOrganization(tx: WriteTx, apiKey: string, organizationId: string): number {
    return this.rows.removeScope(tx, [apiKey, organizationId]);
  }

  /** Indexes by time the activities written before schema 4, once. */
  buildIndex(): Promise<number> {
    return this.rows.build();
  }

  async updateEach(apiKey: string, organizationId: string, changes: ReadonlyArray<{ id: string; fields: Partial<ActivityRecord> }>): Promise<Record<string, ItemOutcome>> {
    return this.store.transaction((tx) => {
      const results: Record<string, ItemOutcome> = {};
      for (const { id, fields } of changes) {
        const current = this.get(apiKey, organizationId, id);
        if (current === undefined) results[id] = 'not-found';
        else if (current.immutable) results[id] = 'immutable';
        else {
          const { timestamp, metadata, origin, immutable } = current;
          this.put(tx, { ...current, ...fields, id, timestamp, metadata, origin, immutable });
          results[id] = 'done';
        }
      }
      return results;
    });
  }

  async removeEach(apiKey: string, organizationId: string, ids: readonly string[]): Promise<Record<string, ItemOutcome>> {
    return this.store.transaction((tx) => {
      const results: Record<string, ItemOutcome> = {};
      for (const id of ids) {
        const current = this.get(apiKey, organizationId, id);
        if (current === undefined) results[id] = 'not-found';
        else if (current.immutable) results[id] = 'immutable';
        else {
          this.remove(tx, current);
          results[id] = 'done';
        }
      }
      return results;
    });
  }
}
