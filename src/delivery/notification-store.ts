// Owns in-app notifications, their time index and per-user channel preferences: DB.notifications, DB.notificationPrefs (upstream 2.18, spec 2.11).
import type { Database, Key } from 'lmdb';
import type { UserRef } from '../doc/annotations/model.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { Page } from './paging.js';
import { TimeIndexed, type PageOptions, type Scope } from './time-index.js';

export interface NotificationRecord {
  readonly id: string;
  readonly notificationSource: string;
  readonly notificationSourceData: unknown;
  readonly actionUser: UserRef | null;
  readonly displayBodyMessage: string;
  readonly displayHeadlineMessageTemplate: string;
  readonly displayHeadlineMessageTemplateData: Record<string, unknown>;
  readonly metadata: { readonly apiKey: string; readonly documentId: string; readonly organizationId: string };
  readonly notifyUsers: Record<string, true>;
  readonly notifyUsersByUserId: Record<string, true>;
  /** Everyone in the organization sees it (custom notifications with `notifyAll`). */
  readonly notifyAll: boolean;
  readonly locationId?: string;
  readonly readByUserIds: string[];
  readonly timestamp: number;
}

export type ChannelPref = 'ALL' | 'MINE' | 'NONE';

export interface NotificationPrefs {
  readonly inbox: ChannelPref;
  readonly email: ChannelPref;
  readonly slack: ChannelPref;
}

export const DEFAULT_PREFS: NotificationPrefs = { inbox: 'ALL', email: 'ALL', slack: 'ALL' };

export interface NotificationFilter {
  readonly organizationId: string;
  readonly documentId?: string;
  readonly locationId?: string;
  readonly userId?: string;
  readonly notificationIds?: readonly string[];
}

/** What a notification read filters on, kept in its time-index row. */
export interface NotificationSummary {
  readonly documentId: string;
  readonly locationId?: string;
  readonly notifyAll: boolean;
  readonly userIds: readonly string[];
}

function scopeOf(record: NotificationRecord): Scope {
  return [record.metadata.apiKey, record.metadata.organizationId];
}

function summarize(record: NotificationRecord): NotificationSummary {
  return {
    documentId: record.metadata.documentId,
    ...(record.locationId === undefined ? {} : { locationId: record.locationId }),
    notifyAll: record.notifyAll,
    userIds: Object.keys(record.notifyUsersByUserId),
  };
}

/** Whether a notification with this summary passes the filter (`notificationIds` aside: those are read by id). */
function matcher(filter: NotificationFilter): (summary: NotificationSummary) => boolean {
  const userId = filter.userId;
  return (s) =>
    (filter.documentId === undefined || s.documentId === filter.documentId) &&
    (filter.locationId === undefined || s.locationId === filter.locationId) &&
    (userId === undefined || s.notifyAll || s.userIds.includes(userId));
}

export class NotificationStore {
  private readonly rows: TimeIndexed<NotificationRecord, NotificationSummary>;
  private readonly prefs: Database<NotificationPrefs, Key>;

  constructor(private readonly store: Store) {
    this.rows = new TimeIndexed(store, { records: DB.notifications, index: DB.notificationTimes, summarize, scopeOf, timeOf: (record) => record.timestamp });
    this.prefs = store.records<NotificationPrefs>(DB.notificationPrefs);
  }

  get(apiKey: string, organizationId: string, id: string): NotificationRecord | undefined {
    return this.rows.get([apiKey, organizationId], id);
  }

  /** Idempotent by id: a delivery retried after a crash writes the same row again. */
  put(tx: WriteTx, record: NotificationRecord): void {
    this.rows.put(tx, scopeOf(record), record);
  }

  add(record: NotificationRecord): Promise<void> {
    return this.store.transaction((tx) => this.put(tx, record));
  }

  /** One page of the organization's notifications in time order (src/delivery/time-index.ts). */
  page(apiKey: string, filter: NotificationFilter, options: PageOptions): Page<NotificationRecord> {
    return this.rows.page([apiKey, filter.organizationId], matcher(filter), options, filter.notificationIds);
  }

  /** Every matching notification of the organization, oldest first. */
  find(apiKey: string, filter: NotificationFilter): NotificationRecord[] {
    if (filter.notificationIds !== undefined) return this.page(apiKey, filter, { pageSize: filter.notificationIds.length, order: 'asc' }).rows;
    return Array.from(this.rows.matching([apiKey, filter.organizationId], matcher(filter)));
  }

  /** Every notification of the API key, or of one organization: GDPR export and erase, document deletion. */
  all(apiKey: string, organizationId?: string): Iterable<NotificationRecord> {
    return this.rows.all(apiKey, organizationId);
  }

  remove(tx: WriteTx, record: NotificationRecord): void {
    this.rows.remove(tx, scopeOf(record), record);
  }

  removeOrganization(tx: WriteTx, apiKey: string, organizationId: string): number {
    return this.rows.removeScope(tx, [apiKey, organizationId]);
  }

  /** Indexes by time the notifications written before schema 4, once. */
  buildIndex(): Promise<number> {
    return this.rows.build();
  }

  /** Applies `change` to each id in one transaction; per-id whether it existed. */
  async updateEach(apiKey: string, organizationId: string, changes: ReadonlyArray<{ id: string; change: (record: NotificationRecord) => NotificationRecord }>): Promise<Record<string, boolean>> {
    return this.store.transaction((tx) => {
      const results: Record<string, boolean> = {};
      for (const { id, change } of changes) {
        const current = this.get(apiKey, organizationId, id);
        results[id] = current !== undefined;
        if (current !== undefined) this.put(tx, change(current));
      }
      return results;
    });
  }

  async removeEach(apiKey: string, organizationId: string, ids: readonly string[]): Promise<Record<string, boolean>> {
    return this.store.transaction((tx) => {
      const results: Record<string, boolean> = {};
      for (const id of ids) {
        const current = this.get(apiKey, organizationId, id);
        results[id] = current !== undefined;
        if (current !== undefined) this.remove(tx, current);
      }
      return results;
    });
  }

  /** Document-level preferences win over the organization-level ones ('' document). */
  prefsOf(apiKey: string, organizationId: string, userId: string, documentId: string): NotificationPrefs {
    return this.prefs.get([apiKey, organizationId, userId, documentId]) ?? this.prefs.get([apiKey, organizationId, userId, '']) ?? DEFAULT_PREFS;
  }

  storedPrefs(apiKey: string, organizationId: string, userId: string, documentId: string): NotificationPrefs | undefined {
    return this.prefs.get([apiKey, organizationId, userId, documentId]);
  }

  async setPrefs(apiKey: string, organizationId: string, userIds: readonly string[], documentIds: readonly string[], config: Partial<NotificationPrefs>): Promise<void> {
    await this.store.transaction(() => {
      for (const userId of userIds) {
        for (const documentId of documentIds) {
          const key = [apiKey, organizationId, userId, documentId];
          this.prefs.putSync(key, { ...(this.prefs.get(key) ?? DEFAULT_PREFS), ...config });
        }
      }
    });
  }
}

/** Whether a user with preference `pref` gets something they are concerned by for `reason`. */
export function prefAllows(pref: ChannelPref, reason: 'mention' | 'assignee' | 'participant'): boolean {
  if (pref === 'NONE') return false;
  if (pref === 'MINE') return reason !== 'participant';
  return true;
}
