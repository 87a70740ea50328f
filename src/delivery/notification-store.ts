// Owns in-app notifications and per-user channel preferences: DB.notifications, DB.notificationPrefs (upstream 2.18, spec 2.11).
import type { Database, Key } from 'lmdb';
import type { UserRef } from '../doc/annotations/model.js';
import type { WriteTx } from '../store/env.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';

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

export class NotificationStore {
  private readonly db: Database<NotificationRecord, Key>;
  private readonly prefs: Database<NotificationPrefs, Key>;

  constructor(private readonly store: Store) {
    this.db = store.records<NotificationRecord>(DB.notifications);
    this.prefs = store.records<NotificationPrefs>(DB.notificationPrefs);
  }

  get(apiKey: string, organizationId: string, id: string): NotificationRecord | undefined {
    return this.db.get([apiKey, organizationId, id]);
  }

  /** Idempotent by id: a delivery retried after a crash writes the same row again. */
  put(_tx: WriteTx, record: NotificationRecord): void {
    this.db.putSync([record.metadata.apiKey, record.metadata.organizationId, record.id], record);
  }

  add(record: NotificationRecord): Promise<void> {
    return this.store.transaction((tx) => this.put(tx, record));
  }

  find(apiKey: string, filter: NotificationFilter): NotificationRecord[] {
    const ids = filter.notificationIds === undefined ? undefined : new Set(filter.notificationIds);
    const out: NotificationRecord[] = [];
    for (const { value } of this.db.getRange({ start: [apiKey, filter.organizationId], end: [apiKey, filter.organizationId, '\uffff'] })) {
      if (ids !== undefined && !ids.has(value.id)) continue;
      if (filter.documentId !== undefined && value.metadata.documentId !== filter.documentId) continue;
      if (filter.locationId !== undefined && value.locationId !== filter.locationId) continue;
      if (filter.userId !== undefined && !value.notifyAll && value.notifyUsersByUserId[filter.userId] !== true) continue;
      out.push(value);
    }
    return out;
  }

  /** Applies `change` to each id in one transaction; per-id whether it existed. */
  async updateEach(apiKey: string, organizationId: string, changes: ReadonlyArray<{ id: string; change: (record: NotificationRecord) => NotificationRecord }>): Promise<Record<string, boolean>> {
    return this.store.transaction(() => {
      const results: Record<string, boolean> = {};
      for (const { id, change } of changes) {
        const current = this.get(apiKey, organizationId, id);
        results[id] = current !== undefined;
        if (current !== undefined) this.db.putSync([apiKey, organizationId, id], change(current));
      }
      return results;
    });
  }

  async remove(apiKey: string, organizationId: string, ids: readonly string[]): Promise<Record<string, boolean>> {
    return this.store.transaction(() => {
      const results: Record<string, boolean> = {};
      for (const id of ids) {
        results[id] = this.get(apiKey, organizationId, id) !== undefined;
        this.db.removeSync([apiKey, organizationId, id]);
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
