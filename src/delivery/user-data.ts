// Owns the delivery room's part of a user's data (GDPR export and erase): their notifications and activity logs.
import type { Database, Key } from 'lmdb';
import { ERASED_USER, type UserDataSource } from '../doc/user-data.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { ActivityRecord } from './activity-store.js';
import type { NotificationRecord } from './notification-store.js';

function rowsOf<V>(db: Database<V, Key>, apiKey: string): Array<{ key: Key; value: V }> {
  return Array.from(db.getRange({ start: [apiKey], end: [apiKey, '\uffff'] }), ({ key, value }) => ({ key, value }));
}

/**
 * Notifications: those addressed to the user or made by them. Erase drops the user from every recipient list,
 * deletes notifications left with no recipient, and replaces them as actor by the erased-user placeholder.
 * Activity logs: those the user acted in; erase keeps the record (an audit trail) with the placeholder as actor.
 */
export function deliveryUserData(store: Store): UserDataSource[] {
  const notifications = store.records<NotificationRecord>(DB.notifications);
  const activities = store.records<ActivityRecord>(DB.activities);
  const prefs = store.records<unknown>(DB.notificationPrefs);
  const concerns = (n: NotificationRecord, userId: string): boolean => n.notifyUsersByUserId[userId] === true || n.actionUser?.userId === userId;
  return [
    {
      feature: 'notifications',
      collect: (apiKey, userId) => rowsOf(notifications, apiKey).map((r) => r.value).filter((n) => concerns(n, userId)),
      erase: (apiKey, userId) =>
        store.transaction(() => {
          let count = 0;
          for (const { key, value } of rowsOf(notifications, apiKey)) {
            if (!concerns(value, userId)) continue;
            count++;
            const { [userId]: _dropped, ...users } = value.notifyUsersByUserId;
            if (Object.keys(users).length === 0 && !value.notifyAll) {
              notifications.removeSync(key);
              continue;
            }
            notifications.putSync(key, {
              ...value,
              notifyUsers: users,
              notifyUsersByUserId: users,
              readByUserIds: value.readByUserIds.filter((id) => id !== userId),
              actionUser: value.actionUser?.userId === userId ? ERASED_USER : value.actionUser,
            });
          }
          for (const { key } of rowsOf(prefs, apiKey)) if ((key as unknown[])[2] === userId) prefs.removeSync(key);
          return count;
        }),
    },
    {
      feature: 'activities',
      collect: (apiKey, userId) => rowsOf(activities, apiKey).map((r) => r.value).filter((a) => a.actionUser.userId === userId),
      erase: (apiKey, userId) =>
        store.transaction(() => {
          let count = 0;
          for (const { key, value } of rowsOf(activities, apiKey)) {
            if (value.actionUser.userId !== userId) continue;
            count++;
            const { user: _user, ...templateData } = value.displayMessageTemplateData;
            activities.putSync(key, { ...value, actionUser: ERASED_USER, displayMessageTemplateData: { ...templateData, actionUser: ERASED_USER.name } });
          }
          return count;
        }),
    },
  ];
}
