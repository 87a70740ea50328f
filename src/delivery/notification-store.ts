// Owns in-app notifications, their time index and per-user channel preferences: DB.notifications, DB.notificationPrefs (upstream 2.18, spec 2.11).
import type { Database, Key } from 'lmdb';
import type { UserRef } from '../doc/annotations/model.js';
import { dict } from '../dict.js';
import { inWriteBatches } from '../store/chunked-scan.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { OrganizationRecords } from './organization-records.js';

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

export class NotificationStore extends OrganizationRecords<NotificationRecord, NotificationSummary, NotificationFilter> {
  private readonly prefs: Database<NotificationPrefs, Key>;

  constructor(store: Store) {
    super(store, { records: DB.notifications, index: DB.notificationTimes }, summarize, { matcher, ids: (filter) => filter.notificationIds });
    this.prefs = store.records<NotificationPrefs>(DB.notificationPrefs);
  }

  add(record: NotificationRecord): Promise<void> {
    return this.store.transaction((tx) => this.put(tx, record));
  }

  /** Applies `change` to each id in one transaction; per-id whether it existed. */
  async updateEach(apiKey: string, organizationId: string, changes: ReadonlyArray<{ id: string; change: (record: NotificationRecord) => NotificationRecord }>): Promise<Record<string, boolean>> {
    return this.store.transaction((tx) => {
      const results = dict<boolean>();
      for (const { id, change } of changes) {
        const current = this.get(apiKey, organizationId, id);
        results[id] = current !== undefined;
        if (current !== undefined) this.put(tx, change(current));
      }
      return results;
    });
  }

  /**
   * Removes each id, WRITE_BATCH to a transaction one after another (src/store/chunked-scan.ts); per id whether it
   * was there (and, with `still`, still passed it when its batch ran). Between batches a reader sees part of them gone.
   */
  async removeEach(apiKey: string, organizationId: string, ids: readonly string[], still: (record: NotificationRecord) => boolean = () => true): Promise<Record<string, boolean>> {
    const results = dict<boolean>();
    for (const id of ids) results[id] = false;
    await inWriteBatches(this.store, ids, (tx, id) => {
      const current = this.get(apiKey, organizationId, id);
      if (current === undefined || !still(current)) return false;
      this.remove(tx, current);
      results[id] = true;
      return true;
    });
    return results;
  }

  /**
   * Removes the organization's notifications the filter matches (`notifications/delete`), keyed by id, oldest first:
   * found in chunks of the time index, removed in batches, each notification re-checked against the filter in its
   * batch (one re-added under its id meanwhile with another document is kept).
   */
  async removeMatching(apiKey: string, filter: NotificationFilter): Promise<Record<string, boolean>> {
    const matches = matcher(filter);
    return this.removeEach(apiKey, filter.organizationId, await this.findIds(apiKey, filter), (record) => matches(summarize(record)));
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
