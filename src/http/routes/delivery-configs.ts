// Owns the workspace delivery-config operations: email, activity, basic webhook, notification and advanced webhook configs.
import type { Delivery } from '../../delivery/service.js';
import {
  DEFAULT_ADVANCED_WEBHOOK_CONFIG,
  updateActivityConfig,
  updateAdvancedWebhookConfig,
  updateBasicWebhookConfig,
  updateEmailConfig,
  updateNotificationConfig,
  viewNotificationConfig,
  type ActivityConfigUpdate,
  type AdvancedWebhookConfigUpdate,
  type BasicWebhookConfigUpdate,
  type EmailConfigUpdate,
  type NotificationConfigUpdate,
} from '../../tenant/delivery-configs.js';
import { ok, operation, type Operation } from '../operation.js';
import { emptyData } from '../schemas/common.js';
import {
  updateActivityConfigSchema,
  updateAdvancedWebhookConfigSchema,
  updateEmailConfigSchema,
  updateNotificationConfigSchema,
  updateWebhookConfigSchema,
} from '../schemas/delivery.js';

export function deliveryConfigOperations(delivery: Delivery): Operation[] {
  const { configs, clock } = delivery;
  return [
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/emailconfig/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('Email config retrieved successfully.', configs.email(ctx.identity.apiKey)),
    }),
    operation<EmailConfigUpdate, 'apiKey'>({
      paths: ['/v2/workspace/emailconfig/update'],
      auth: 'apiKey',
      schema: updateEmailConfigSchema,
      handle: async (input, ctx) => {
        const next = await configs.update(ctx.identity.apiKey, 'email', (stored) => updateEmailConfig(stored ?? configs.email(ctx.identity.apiKey), input));
        return ok('Email config updated successfully.', next);
      },
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/activityconfig/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('Activity config retrieved successfully.', { activityServiceConfig: configs.stored(ctx.identity.apiKey, 'activity') ?? { isEnabled: false } }),
    }),
    operation<{ activityServiceConfig: ActivityConfigUpdate }, 'apiKey'>({
      paths: ['/v2/workspace/activityconfig/update'],
      auth: 'apiKey',
      schema: updateActivityConfigSchema,
      handle: async (input, ctx) => {
        const next = await configs.update(ctx.identity.apiKey, 'activity', (stored) => updateActivityConfig(stored, input.activityServiceConfig, clock.now()));
        return ok('Activity config updated successfully.', { activityServiceConfig: next });
      },
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/webhookconfig/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('Webhook config retrieved successfully.', configs.webhook(ctx.identity.apiKey)),
    }),
    operation<BasicWebhookConfigUpdate, 'apiKey'>({
      paths: ['/v2/workspace/webhookconfig/update'],
      auth: 'apiKey',
      schema: updateWebhookConfigSchema,
      handle: async (input, ctx) => {
        const next = await configs.update(ctx.identity.apiKey, 'webhook', (stored) => updateBasicWebhookConfig(stored ?? configs.webhook(ctx.identity.apiKey), input));
        return ok('Webhook config updated successfully.', next);
      },
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/notificationconfig/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('Notification config retrieved successfully.', viewNotificationConfig(configs.notification(ctx.identity.apiKey))),
    }),
    operation<NotificationConfigUpdate, 'apiKey'>({
      paths: ['/v2/workspace/notificationconfig/update'],
      auth: 'apiKey',
      schema: updateNotificationConfigSchema,
      handle: async (input, ctx) => {
        const next = await configs.update(ctx.identity.apiKey, 'notification', (stored) => updateNotificationConfig(stored ?? configs.notification(ctx.identity.apiKey), input));
        return ok('Notification config updated successfully.', viewNotificationConfig(next));
      },
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhookconfig/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('Advanced webhook config retrieved successfully.', configs.stored(ctx.identity.apiKey, 'advancedWebhook') ?? DEFAULT_ADVANCED_WEBHOOK_CONFIG),
    }),
    operation<AdvancedWebhookConfigUpdate, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhookconfig/update'],
      auth: 'apiKey',
      schema: updateAdvancedWebhookConfigSchema,
      handle: async (input, ctx) => {
        const next = await configs.update(ctx.identity.apiKey, 'advancedWebhook', (stored) => updateAdvancedWebhookConfig(stored, input));
        return ok('Advanced webhook config updated successfully.', next);
      },
    }),
  ];
}
