// Owns activity-log records: DB.activities and their time index (spec 2.12, upstream 2.19), with the immutability rule.
import { dict } from '../dict.js';
import type { UserRef } from '../doc/annotations/model.js';
import { inWriteBatches } from '../store/chunked-scan.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { OrganizationRecords } from './organization-records.js';

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

export class ActivityStore extends OrganizationRecords<ActivityRecord, ActivitySummary, ActivityFilter> {
  constructor(store: Store) {
    super(store, { records: DB.activities, index: DB.activityTimes }, summarize, { matcher, ids: (filter) => filter.activityIds });
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

  async updateEach(apiKey: string, organizationId: string, changes: ReadonlyArray<{ id: string; fields: Partial<ActivityRecord> }>): Promise<Record<string, ItemOutcome>> {
    return this.store.transaction((tx) => {
      const results = dict<ItemOutcome>();
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

  /**
   * Removes each id, WRITE_BATCH to a transaction one after another (src/store/chunked-scan.ts: a filter may match
   * every record of a document); per id what happened. Between batches a reader sees part of them gone.
   */
  async removeEach(apiKey: string, organizationId: string, ids: readonly string[]): Promise<Record<string, ItemOutcome>> {
    const results = dict<ItemOutcome>();
    await inWriteBatches(this.store, ids, (tx, id) => {
      const current = this.get(apiKey, organizationId, id);
      if (current === undefined) results[id] = 'not-found';
      else if (current.immutable) results[id] = 'immutable';
      else {
        this.remove(tx, current);
        results[id] = 'done';
        return true;
      }
      return false;
    });
    return results;
  }
}
