// Owns activity-log records: DB.activities (spec 2.12, upstream 2.19), with the immutability rule.
import type { Database, Key } from 'lmdb';
import type { UserRef } from '../doc/annotations/model.js';
import type { WriteTx } from '../store/env.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';

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

export class ActivityStore {
  private readonly db: Database<ActivityRecord, Key>;

  constructor(private readonly store: Store) {
    this.db = store.records<ActivityRecord>(DB.activities);
  }

  get(apiKey: string, organizationId: string, id: string): ActivityRecord | undefined {
    return this.db.get([apiKey, organizationId, id]);
  }

  put(_tx: WriteTx, record: ActivityRecord): void {
    this.db.putSync([record.metadata.apiKey, record.metadata.organizationId, record.id], record);
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

  find(apiKey: string, filter: ActivityFilter): ActivityRecord[] {
    const ids = filter.activityIds === undefined ? undefined : new Set(filter.activityIds);
    const out: ActivityRecord[] = [];
    for (const { value } of this.db.getRange({ start: [apiKey, filter.organizationId], end: [apiKey, filter.organizationId, '\uffff'] })) {
      if (ids !== undefined && !ids.has(value.id)) continue;
      if (filter.documentId !== undefined && value.metadata.documentId !== filter.documentId) continue;
      if (filter.targetEntityId !== undefined && value.targetEntityId !== filter.targetEntityId) continue;
      if (filter.featureTypes !== undefined && !filter.featureTypes.includes(value.featureType)) continue;
      if (filter.actionTypes !== undefined && !filter.actionTypes.includes(value.actionType)) continue;
      if (filter.userId !== undefined && value.actionUser.userId !== filter.userId) continue;
      out.push(value);
    }
    return out;
  }

  async updateEach(apiKey: string, organizationId: string, changes: ReadonlyArray<{ id: string; fields: Partial<ActivityRecord> }>): Promise<Record<string, ItemOutcome>> {
    return this.store.transaction(() => {
      const results: Record<string, ItemOutcome> = {};
      for (const { id, fields } of changes) {
        const current = this.get(apiKey, organizationId, id);
        if (current === undefined) results[id] = 'not-found';
        else if (current.immutable) results[id] = 'immutable';
        else {
          this.db.putSync([apiKey, organizationId, id], { ...current, ...fields, id, metadata: current.metadata, origin: current.origin, immutable: current.immutable });
          results[id] = 'done';
        }
      }
      return results;
    });
  }

  async removeEach(apiKey: string, organizationId: string, ids: readonly string[]): Promise<Record<string, ItemOutcome>> {
    return this.store.transaction(() => {
      const results: Record<string, ItemOutcome> = {};
      for (const id of ids) {
        const current = this.get(apiKey, organizationId, id);
        if (current === undefined) results[id] = 'not-found';
        else if (current.immutable) results[id] = 'immutable';
        else {
          this.db.removeSync([apiKey, organizationId, id]);
          results[id] = 'done';
        }
      }
      return results;
    });
  }
}
