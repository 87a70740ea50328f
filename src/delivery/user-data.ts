// Owns the delivery room's part of a user's data (GDPR export and erase): their notifications and activity logs.
import { ERASED_USER, type UserDataSource } from '../doc/user-data.js';
import type { Store } from '../store/env.js';
import { DB, KEY_END } from '../store/keys.js';
import type { ActivityStore } from './activity-store.js';
import type { NotificationRecord, NotificationStore } from './notification-store.js';

/**
 * Notifications: those addressed to the user or made by them. Erase drops the user from every recipient list,
 * deletes notifications left with no recipient, and replaces them as actor by the erased-user placeholder.
 * Activity logs: those the user acted in; erase keeps the record (an audit trail) with the placeholder as actor.
 */
export function deliveryUserData(store: Store, notifications: NotificationStore, activities: ActivityStore): UserDataSource[] {
  const prefs = store.records<unknown>(DB.notificationPrefs);
  const concerns = (n: NotificationRecord, userId: string): boolean => n.notifyUsersByUserId[userId] === true || n.actionUser?.userId === userId;
  return [
    {
      feature: 'notifications',
      collect: (apiKey, userId) => Array.from(notifications.all(apiKey)).filter((n) => concerns(n, userId)),
      erase: (apiKey, userId) =>
        store.transaction((tx) => {
          let count = 0;
          for (const value of Array.from(notifications.all(apiKey))) {
            if (!concerns(value, userId)) continue;
            count++;
            const { [userId]: _dropped, ...users } = value.notifyUsersByUserId;
            if (Object.keys(users).length === 0 && !value.notifyAll) {
              notifications.remove(tx, value);
              continue;
            }
            notifications.put(tx, {
              ...value,
              notifyUsers: users,
              notifyUsersByUserId: users,
              readByUserIds: value.readByUserIds.filter((id) => id !== userId),
              actionUser: value.actionUser?.userId === userId ? ERASED_USER : value.actionUser,
            });
          }
          for (const key of Array.from(prefs.getKeys({ start: [apiKey], end: [apiKey, KEY_END] }))) if ((key as unknown[])[2] === userId) prefs.removeSync(key);
          return count;
        }),
    },
    {
      feature: 'activities',
      collect: (apiKey, userId) => Array.from(activities.all(apiKey)).filter((a) => a.actionUser.userId === userId),
      erase: (apiKey, userId) =>
        store.transaction((tx) => {
          let count = 0;
          for (const value of Array.from(activities.all(apiKey))) {
            if (value.actionUser.userId !== userId) continue;
            count++;
            const { user: _user, ...templateData } = value.displayMessageTemplateData;
            activities.put(tx, { ...value, actionUser: ERASED_USER, displayMessageTemplateData: { ...templateData, actionUser: ERASED_USER.name } });
          }
          return count;
        }),
    },
  ];
}
