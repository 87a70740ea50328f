// Owns the delivery room's part of a user's data (GDPR export and erase): their notifications and activity logs.
import type { Key } from 'lmdb';
import { ERASED_USER, type UserDataSource } from '../doc/user-data.js';
import { inWriteBatches, pageMatches } from '../store/chunked-scan.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { ActivityRecord, ActivityStore } from './activity-store.js';
import type { NotificationRecord, NotificationStore } from './notification-store.js';

/**
 * Notifications: those addressed to the user or made by them. Erase drops the user from every recipient list,
 * deletes notifications left with no recipient, and replaces them as actor by the erased-user placeholder.
 * Activity logs: those the user acted in; erase keeps the record (an audit trail) with the placeholder as actor.
 * Both are found by a chunked scan of the API key's records (src/store/chunked-scan.ts) and changed WRITE_BATCH at a
 * time, each record re-read in its transaction: an erase of a user present everywhere never holds the event loop for
 * the whole API key, and a record changed meanwhile is changed from its current state.
 */
export function deliveryUserData(store: Store, notifications: NotificationStore, activities: ActivityStore): UserDataSource[] {
  const prefs = store.records<unknown>(DB.notificationPrefs);
  const concerns = (n: NotificationRecord, userId: string): boolean => n.notifyUsersByUserId[userId] === true || n.actionUser?.userId === userId;
  const where = (record: { metadata: { organizationId: string }; id: string }) => ({ organizationId: record.metadata.organizationId, id: record.id });
  return [
    {
      feature: 'notifications',
      collect: (apiKey, userId, after, limit) => notifications.pageOfAll(apiKey, after, limit, (_key, n) => (concerns(n, userId) ? n : undefined)),
      erase: async (apiKey, userId) => {
        const found = await notifications.pageOfAll(apiKey, undefined, Infinity, (_key, n) => (concerns(n, userId) ? where(n) : undefined));
        const count = await inWriteBatches(store, found.items, (tx, { organizationId, id }) => {
          const value = notifications.get(apiKey, organizationId, id);
          if (value === undefined || !concerns(value, userId)) return false;
          const { [userId]: _dropped, ...users } = value.notifyUsersByUserId;
          if (Object.keys(users).length === 0 && !value.notifyAll) {
            notifications.remove(tx, value);
            return true;
          }
          notifications.put(tx, {
            ...value,
            notifyUsers: users,
            notifyUsersByUserId: users,
            readByUserIds: value.readByUserIds.filter((reader) => reader !== userId),
            actionUser: value.actionUser?.userId === userId ? ERASED_USER : value.actionUser,
          });
          return true;
        });
        // [apiKey, organizationId, userId, documentId or '']
        const keys = await pageMatches(prefs, [apiKey], undefined, Infinity, (key) => ((key as unknown[])[2] === userId ? key : undefined));
        await inWriteBatches(store, keys.items, (_tx, key: Key) => prefs.removeSync(key));
        return count;
      },
    },
    {
      feature: 'activities',
      collect: (apiKey, userId, after, limit) => activities.pageOfAll(apiKey, after, limit, (_key, a) => (a.actionUser.userId === userId ? a : undefined)),
      erase: async (apiKey, userId) => {
        const found = await activities.pageOfAll(apiKey, undefined, Infinity, (_key, a) => (a.actionUser.userId === userId ? where(a) : undefined));
        return inWriteBatches(store, found.items, (tx, { organizationId, id }) => {
          const value: ActivityRecord | undefined = activities.get(apiKey, organizationId, id);
          if (value === undefined || value.actionUser.userId !== userId) return false;
          const { user: _user, ...templateData } = value.displayMessageTemplateData;
          activities.put(tx, { ...value, actionUser: ERASED_USER, displayMessageTemplateData: { ...templateData, actionUser: ERASED_USER.name } });
          return true;
        });
      },
    },
  ];
}
