// Owns the JSON schemas of the delivery configs, advanced webhook endpoints, notifications and activity logs.
import { arrayOf, httpUrl, idString, nonEmptyString, object, pageToken } from './common.js';
import { userRef } from './comments.js';

/**
 * Prototype keys pass validation and are dropped by the merge (src/tenant/config-merge.ts), so a body carrying
 * `__proto__` is answered like one without it; any other unknown key is refused.
 */
const prototypeKeys = { '^(__proto__|constructor|prototype)$': {} } as const;

function strict(properties: Record<string, object>, required: readonly string[] = [], minProperties = 0): object {
  return { type: 'object', properties, required: [...required], additionalProperties: false, patternProperties: prototypeKeys, ...(minProperties > 0 ? { minProperties } : {}) };
}

const triggers = { type: 'object', additionalProperties: { type: 'boolean' }, patternProperties: prototypeKeys } as const;
const shortText = { type: 'string', maxLength: 2048 } as const;
const urlOrEmpty = { anyOf: [{ const: '' }, httpUrl] } as const;
const int = (minimum: number, maximum: number): object => ({ type: 'integer', minimum, maximum });

export const updateEmailConfigSchema = strict(
  {
    useEmailService: { type: 'boolean' },
    emailServiceConfig: strict({
      type: { type: 'string', maxLength: 64 },
      apiKey: shortText,
      fromEmail: { anyOf: [{ const: '' }, { type: 'string', format: 'email', maxLength: 320 }] },
      fromCompany: { type: 'string', maxLength: 200 },
      commentTemplateId: shortText,
      tagTemplateId: shortText,
      triggers,
    }),
  },
  [],
  1,
);

export const updateActivityConfigSchema = strict(
  {
    activityServiceConfig: strict(
      { isEnabled: { type: 'boolean' }, enabledTime: { type: 'number', minimum: 0 }, immutable: { type: 'boolean' }, triggers: strict({ comment: triggers }) },
      [],
      1,
    ),
  },
  ['activityServiceConfig'],
);

export const updateWebhookConfigSchema = strict(
  {
    useWebhookService: { type: 'boolean' },
    webhookServiceConfig: strict({
      authToken: shortText,
      rawNotificationUrl: urlOrEmpty,
      processedNotificationUrl: urlOrEmpty,
      encodeData: { type: 'boolean' },
      encryptData: { type: 'boolean' },
      publicKey: { type: 'string', maxLength: 8192 },
      enableDataProtection: { type: 'boolean' },
      triggers,
    }),
  },
  [],
  1,
);

const batchRule = strict({ isEnabled: { type: 'boolean' }, batchWindowSeconds: int(10, 604_800), maxActivities: int(2, 50) });

export const updateNotificationConfigSchema = strict(
  {
    useNotificationService: { type: 'boolean' },
    notificationServiceConfig: strict({
      triggers: strict({ comment: triggers, huddle: triggers }),
      delayConfig: strict({ isEnabled: { type: 'boolean' }, delaySeconds: int(10, 15_552_000) }),
      batchConfig: strict({ document: batchRule, user: batchRule }),
    }),
  },
  [],
  1,
);

export const updateAdvancedWebhookConfigSchema = strict(
  {
    isEnabled: { type: 'boolean' },
    encodeData: { type: 'boolean' },
    // With a usable publicKey only (src/tenant/payload-key.ts): bodies are sealed to it (docs/delivery.md).
    encryptData: { type: 'boolean' },
    publicKey: { type: 'string', maxLength: 8192 },
    enableDataProtection: { type: 'boolean' },
  },
  [],
  1,
);

const eventTypes = arrayOf({ type: 'string', minLength: 1, maxLength: 256 }, { min: 1, max: 100 });
const metadata = { type: 'object', additionalProperties: { type: 'string', maxLength: 2048 }, maxProperties: 50 } as const;
const rateLimit = { type: 'integer', minimum: 1, maximum: 10_000 } as const;
const endpointId = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const createEndpointSchema = object(
  {
    url: httpUrl,
    description: { type: 'string', maxLength: 2048 },
    filterTypes: eventTypes,
    channels: eventTypes,
    disabled: { type: 'boolean' },
    rateLimit,
    uid: { type: 'string', minLength: 1, maxLength: 256 },
    metadata,
  },
  ['url'],
  false,
);

const nullable = (schema: object): object => ({ anyOf: [{ type: 'null' }, schema] });

export const updateEndpointSchema = {
  ...object(
    {
      endpointId,
      url: httpUrl,
      description: nullable({ type: 'string', maxLength: 2048 }),
      filterTypes: nullable(eventTypes),
      channels: nullable(eventTypes),
      disabled: { type: 'boolean' },
      rateLimit: nullable(rateLimit),
      uid: nullable({ type: 'string', minLength: 1, maxLength: 256 }),
      metadata,
    },
    ['endpointId'],
    false,
  ),
  minProperties: 2,
};

export const listEndpointsSchema = object({ limit: { type: 'integer', minimum: 1, maximum: 250 }, iterator: pageToken }, [], false);
export const endpointIdSchema = object({ endpointId }, ['endpointId'], false);
export const messageAttemptsSchema = object({ endpointId, messageId: idString }, ['endpointId', 'messageId'], false);
export const listMessagesSchema = object({ endpointId, status: { enum: ['pending', 'success', 'fail'] }, limit: { type: 'integer', minimum: 1, maximum: 250 } }, ['endpointId'], false);

const notificationIdString = { type: 'string', minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' } as const;
const ids30 = (items: object): object => arrayOf(items, { min: 1, max: 30 });

export const getNotificationsSchema = object({
  organizationId: idString,
  documentId: idString,
  locationId: idString,
  userId: idString,
  notificationIds: ids30(idString),
  pageSize: { type: 'integer', minimum: 1, maximum: 1000 },
  pageToken,
  order: { enum: ['asc', 'desc'] },
}, ['organizationId']);

export const addNotificationSchema = object({
  organizationId: idString,
  documentId: idString,
  actionUser: userRef,
  notificationId: notificationIdString,
  displayHeadlineMessageTemplate: { type: 'string', minLength: 1, maxLength: 4096 },
  displayHeadlineMessageTemplateData: { type: 'object' },
  displayBodyMessage: { type: 'string', maxLength: 100_000 },
  notifyUsers: arrayOf(userRef, { max: 1000 }),
  notifyAll: { type: 'boolean' },
  notificationSource: { enum: ['custom', 'comment', 'huddle', 'crdt'] },
  notificationSourceData: { type: 'object' },
  locationId: idString,
}, ['organizationId', 'documentId', 'actionUser', 'notifyUsers', 'displayHeadlineMessageTemplate']);

export const updateNotificationsSchema = object({
  organizationId: idString,
  notifications: arrayOf(object({
    id: idString,
    actionUser: userRef,
    displayHeadlineMessageTemplate: { type: 'string', minLength: 1, maxLength: 4096 },
    displayHeadlineMessageTemplateData: { type: 'object' },
    displayBodyMessage: { type: 'string', maxLength: 100_000 },
    notificationSourceData: { type: 'object' },
    readByUserIds: arrayOf(idString, { max: 1000 }),
  }, ['id']), { min: 1, max: 100 }),
}, ['organizationId', 'notifications']);

export const deleteNotificationsSchema = object({ organizationId: idString, documentId: idString, locationId: idString, userId: idString, notificationIds: ids30(idString) }, ['organizationId']);

const pref = { enum: ['ALL', 'MINE', 'NONE'] } as const;
export const setNotificationPrefsSchema = object({
  organizationId: idString,
  documentIds: ids30(idString),
  userIds: ids30(idString),
  config: object({ inbox: pref, email: pref, slack: pref }, [], false),
}, ['organizationId', 'userIds', 'config']);

export const getNotificationPrefsSchema = object({ organizationId: idString, userId: idString, documentIds: ids30(idString), getOrganizationConfig: { type: 'boolean' } }, ['organizationId', 'userId']);

const featureType = { enum: ['comment', 'reaction', 'recorder', 'crdt', 'custom'] } as const;
const changes = { type: 'object', additionalProperties: object({ from: {}, to: {} }, []) } as const;
const activityFields = {
  changes,
  entityData: {},
  entityTargetData: {},
  displayMessageTemplate: { type: 'string', maxLength: 4096 },
  displayMessageTemplateData: { type: 'object' },
  actionIcon: { type: 'string', maxLength: 2048 },
};

export const addActivitiesSchema = object({
  organizationId: idString,
  documentId: idString,
  activities: arrayOf(object({
    id: notificationIdString,
    featureType,
    actionType: nonEmptyString,
    actionUser: userRef,
    targetEntityId: idString,
    targetSubEntityId: idString,
    ...activityFields,
    isActivityResolverUsed: { type: 'boolean' },
  }, ['featureType', 'actionType', 'actionUser']), { min: 1, max: 100 }),
}, ['organizationId', 'documentId', 'activities']);

export const getActivitiesSchema = object({
  organizationId: idString,
  documentId: idString,
  targetEntityId: idString,
  featureTypes: arrayOf(featureType, { min: 1, max: 5 }),
  actionTypes: ids30(nonEmptyString),
  userId: idString,
  activityIds: ids30(idString),
  order: { enum: ['asc', 'desc'] },
  pageSize: { type: 'integer', minimum: 1, maximum: 1000 },
  pageToken,
}, ['organizationId']);

export const updateActivitiesSchema = object({
  organizationId: idString,
  activities: arrayOf(object({ id: idString, ...activityFields }, ['id'], false), { min: 1, max: 100 }),
}, ['organizationId', 'activities']);

/** At least one of documentId, targetEntityId, activityIds: checked by the handler (ajv strict mode refuses `required` of optional properties in anyOf). */
export const deleteActivitiesSchema = object({ organizationId: idString, documentId: idString, targetEntityId: idString, activityIds: ids30(idString) }, ['organizationId']);
