// Owns the notification operations (spec 4.23, upstream 2.18): add, get (v1 list, v2 paged), update, delete, per-user config.
import { randomUUID } from 'node:crypto';
import { dict } from '../../dict.js';
import type { UserRef } from '../../doc/annotations/model.js';
import type { NotificationPrefs, NotificationRecord } from '../../delivery/notification-store.js';
import type { Delivery } from '../../delivery/service.js';
import { ok, operation, type Operation } from '../operation.js';
import { addNotificationSchema, deleteNotificationsSchema, getNotificationPrefsSchema, getNotificationsSchema, setNotificationPrefsSchema, updateNotificationsSchema } from '../schemas/delivery.js';

interface GetInput {
  organizationId: string;
  documentId?: string;
  locationId?: string;
  userId?: string;
  notificationIds?: string[];
  pageSize?: number;
  pageToken?: string;
  order?: 'asc' | 'desc';
}

interface AddInput {
  organizationId: string;
  documentId: string;
  actionUser: UserRef;
  notificationId?: string;
  displayHeadlineMessageTemplate: string;
  displayHeadlineMessageTemplateData?: Record<string, unknown>;
  displayBodyMessage?: string;
  notifyUsers: UserRef[];
  notifyAll?: boolean;
  notificationSource?: string;
  notificationSourceData?: Record<string, unknown>;
  locationId?: string;
}

interface UpdateItem {
  id: string;
  actionUser?: UserRef;
  displayHeadlineMessageTemplate?: string;
  displayHeadlineMessageTemplateData?: Record<string, unknown>;
  displayBodyMessage?: string;
  notificationSourceData?: Record<string, unknown>;
  readByUserIds?: string[];
}

/** Spec 2.11 shape, plus Plait's `readByUserIds` (the read state Update Notifications writes). */
function view(record: NotificationRecord): Record<string, unknown> {
  const { notifyAll: _notifyAll, locationId: _locationId, ...rest } = record;
  return rest;
}

export function notificationOperations(delivery: Delivery): Operation[] {
  const { notifications, clock } = delivery;
  const both = (path: string): string[] => [`/v2/notifications/${path}`, `/v1/notifications/${path}`];
  return [
    operation<AddInput, 'apiKey'>({
      paths: both('add'),
      auth: 'apiKey',
      schema: addNotificationSchema,
      handle: async (input, ctx) => {
        const users = Object.fromEntries(input.notifyUsers.map((u) => [u.userId, true as const]));
        await notifications.add({
          id: input.notificationId ?? `ntf_${randomUUID().replaceAll('-', '')}`,
          notificationSource: input.notificationSource ?? 'custom',
          notificationSourceData: input.notificationSourceData ?? {},
          actionUser: input.actionUser,
          displayBodyMessage: input.displayBodyMessage ?? '',
          displayHeadlineMessageTemplate: input.displayHeadlineMessageTemplate,
          displayHeadlineMessageTemplateData: input.displayHeadlineMessageTemplateData ?? {},
          metadata: { apiKey: ctx.identity.apiKey, documentId: input.documentId, organizationId: input.organizationId },
          notifyUsers: users,
          notifyUsersByUserId: users,
          // Upstream: notifyAll defaults to true (the whole organization) unless specific users are named.
          notifyAll: input.notifyAll ?? input.notifyUsers.length === 0,
          ...(input.locationId === undefined ? {} : { locationId: input.locationId }),
          readByUserIds: [],
          timestamp: clock.now(),
        });
        return ok('Notification added successfully.', { success: true, message: 'Notification added successfully.' });
      },
    }),
    operation<GetInput, 'apiKey'>({
      paths: ['/v1/notifications/get'],
      auth: 'apiKey',
      schema: getNotificationsSchema,
      handle: async (input, ctx) => {
        const rows = (await notifications.page(ctx.identity.apiKey, input, { pageSize: 1000, order: input.order })).rows;
        return ok('Notifications retrieved successfully.', rows.map(view));
      },
    }),
    operation<GetInput, 'apiKey'>({
      paths: ['/v2/notifications/get'],
      auth: 'apiKey',
      schema: getNotificationsSchema,
      handle: async (input, ctx) => {
        const result = await notifications.page(ctx.identity.apiKey, input, { pageSize: input.pageSize ?? 1000, pageToken: input.pageToken, order: input.order });
        return ok('Notifications retrieved successfully.', result.rows.map(view), result.pageToken === undefined ? undefined : { pageToken: result.pageToken });
      },
    }),
    operation<{ organizationId: string; notifications: UpdateItem[] }, 'apiKey'>({
      paths: both('update'),
      auth: 'apiKey',
      schema: updateNotificationsSchema,
      handle: async (input, ctx) => {
        const results = await notifications.updateEach(
          ctx.identity.apiKey,
          input.organizationId,
          input.notifications.map(({ id, readByUserIds, ...fields }) => ({
            id,
            change: (record) => ({ ...record, ...fields, readByUserIds: readByUserIds === undefined ? record.readByUserIds : [...new Set([...record.readByUserIds, ...readByUserIds])] }),
          })),
        );
        return ok('Notifications updated.', perItem(results, 'Notification updated.', 'Failed to update notification: not found.'));
      },
    }),
    operation<{ organizationId: string; documentId?: string; locationId?: string; userId?: string; notificationIds?: string[] }, 'apiKey'>({
      paths: both('delete'),
      auth: 'apiKey',
      schema: deleteNotificationsSchema,
      handle: async (input, ctx) => {
        const results = await notifications.removeMatching(ctx.identity.apiKey, input);
        for (const id of input.notificationIds ?? []) if (!Object.hasOwn(results, id)) results[id] = false;
        return ok('Notifications deleted.', perItem(results, 'Notification deleted.', 'Failed to delete notification: not found.'));
      },
    }),
    operation<{ organizationId: string; documentIds?: string[]; userIds: string[]; config: Partial<NotificationPrefs> }, 'apiKey'>({
      paths: both('config/set'),
      auth: 'apiKey',
      schema: setNotificationPrefsSchema,
      handle: async (input, ctx) => {
        const documentIds = input.documentIds ?? [''];
        await notifications.setPrefs(ctx.identity.apiKey, input.organizationId, input.userIds, documentIds, input.config);
        const data = dict<unknown>();
        for (const userId of input.userIds) {
          data[userId] = { success: true, userId, documentId: input.documentIds === undefined ? null : input.documentIds.join(','), message: 'Notification config set.' };
        }
        return ok('Notification config set.', data);
      },
    }),
    operation<{ organizationId: string; userId: string; documentIds?: string[]; getOrganizationConfig?: boolean }, 'apiKey'>({
      paths: both('config/get'),
      auth: 'apiKey',
      schema: getNotificationPrefsSchema,
      handle: (input, ctx) => {
        const apiKey = ctx.identity.apiKey;
        const scopes = [...(input.documentIds ?? []), ...(input.documentIds === undefined || input.getOrganizationConfig === true ? [''] : [])];
        const data = scopes.map((documentId) => ({
          config: documentId === '' ? notifications.prefsOf(apiKey, input.organizationId, input.userId, '') : notifications.prefsOf(apiKey, input.organizationId, input.userId, documentId),
          metadata: { organizationId: input.organizationId, apiKey, documentId: documentId === '' ? null : documentId, userId: input.userId },
        }));
        return ok('Notification config retrieved.', data);
      },
    }),
  ];
}

function perItem(results: Record<string, boolean>, yes: string, no: string): Record<string, { success: boolean; message: string }> {
  return Object.fromEntries(Object.entries(results).map(([id, success]) => [id, { success, message: success ? yes : no }]));
}
