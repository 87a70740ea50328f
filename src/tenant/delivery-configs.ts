// Owns the rules of the five delivery configs (spec 2.14, 3, 4.5, 4.9, 4.18, 4.24, 4.25; upstream 2.5-2.10): defaults, seeding, merge.
import { failedPrecondition, invalidArgument } from '../errors.js';
import { deepMerge, sanitize } from './config-merge.js';
import { readPayloadKey } from './payload-key.js';
import { ACTIVITY_COMMENT_TRIGGERS, EMAIL_COMMENT_TRIGGERS, HUDDLE_TRIGGERS, HUDDLE_TRIGGER_NAMES, STANDARD_COMMENT_TRIGGERS, allOn, type Triggers } from './triggers.js';

export const EMAIL_TYPES = ['default', 'sendgrid', 'custom'] as const;
export type EmailType = (typeof EMAIL_TYPES)[number];

export interface EmailConfig {
  readonly useEmailService: boolean;
  readonly emailServiceConfig: {
    readonly type: EmailType;
    readonly apiKey: string;
    readonly fromEmail: string;
    readonly fromCompany: string;
    readonly commentTemplateId: string;
    readonly tagTemplateId: string;
    readonly triggers?: Triggers;
  };
}

export interface EmailConfigUpdate {
  readonly useEmailService?: boolean;
  readonly emailServiceConfig?: { readonly type?: string; readonly apiKey?: string; readonly fromEmail?: string; readonly fromCompany?: string; readonly triggers?: Triggers };
}

export const DEFAULT_EMAIL_CONFIG: EmailConfig = {
  useEmailService: false,
  emailServiceConfig: { type: 'default', apiKey: '', fromEmail: '', fromCompany: '', commentTemplateId: '', tagTemplateId: '' },
};

/** Spec 3: the first enable (useEmailService true, or type custom) with no stored triggers seeds, then the request merges on top. */
export function updateEmailConfig(stored: EmailConfig, update: EmailConfigUpdate): EmailConfig {
  const type = update.emailServiceConfig?.type;
  if (type !== undefined && !(EMAIL_TYPES as readonly string[]).includes(type)) {
    throw invalidArgument(`Invalid email service configuration: data.emailServiceConfig.type must be one of ${EMAIL_TYPES.join(', ')}, got "${type}"`);
  }
  const enabling = update.useEmailService === true || type === 'custom';
  let base = stored;
  if (enabling && stored.emailServiceConfig.triggers === undefined) {
    base = {
      ...stored,
      useEmailService: true,
      emailServiceConfig: { ...stored.emailServiceConfig, type: 'custom', triggers: { ...allOn(EMAIL_COMMENT_TRIGGERS), ...allOn(HUDDLE_TRIGGERS) } },
    };
  }
  const next = deepMerge(base, sanitize(update));
  if (next.useEmailService && next.emailServiceConfig.type === 'sendgrid' && next.emailServiceConfig.apiKey === '') {
    throw invalidArgument('Invalid email service configuration: data.emailServiceConfig.apiKey is required for type sendgrid');
  }
  return next;
}

export interface ActivityConfig {
  readonly isEnabled: boolean;
  readonly enabledTime?: number;
  readonly immutable?: boolean;
  readonly triggers?: { readonly comment?: Triggers; readonly [group: string]: Triggers | undefined };
}

export interface ActivityConfigUpdate {
  readonly isEnabled?: boolean;
  readonly enabledTime?: number;
  readonly immutable?: boolean;
  readonly triggers?: { readonly comment?: Triggers };
}

/** Spec 4.9 and 3: seeded on the first enable; `enabledTime` kept when omitted, stamped when first enabled without one. */
export function updateActivityConfig(stored: ActivityConfig | undefined, update: ActivityConfigUpdate, now: number): ActivityConfig {
  let base: ActivityConfig = stored ?? { isEnabled: false };
  if (update.isEnabled === true && base.triggers === undefined) {
    base = { ...base, isEnabled: true, immutable: true, triggers: { comment: allOn(ACTIVITY_COMMENT_TRIGGERS) } };
  }
  const next = deepMerge(base, sanitize(update));
  const stamped = next.isEnabled && next.enabledTime === undefined ? { ...next, enabledTime: now } : next;
  return { ...stamped, isEnabled: stamped.isEnabled === true };
}

export interface BasicWebhookConfig {
  readonly useWebhookService: boolean;
  readonly webhookServiceConfig: {
    readonly authToken: string;
    readonly rawNotificationUrl: string;
    readonly processedNotificationUrl: string;
    readonly encodeData?: boolean;
    /** Bodies sealed to `publicKey` (src/delivery/payloads.ts); refused without a usable key (payload-key.ts). */
    readonly encryptData?: boolean;
    readonly publicKey?: string;
    readonly enableDataProtection?: boolean;
    readonly triggers?: Triggers;
  };
}

export interface BasicWebhookConfigUpdate {
  readonly useWebhookService?: boolean;
  readonly webhookServiceConfig?: Partial<BasicWebhookConfig['webhookServiceConfig']>;
}

export const DEFAULT_BASIC_WEBHOOK_CONFIG: BasicWebhookConfig = {
  useWebhookService: false,
  webhookServiceConfig: { authToken: '', rawNotificationUrl: '', processedNotificationUrl: '' },
};

/** Upstream 2.9: the first enable seeds standard comment + huddle triggers on, crdt/recorder and suggestions off. */
export function updateBasicWebhookConfig(stored: BasicWebhookConfig, update: BasicWebhookConfigUpdate): BasicWebhookConfig {
  let base = stored;
  if (update.useWebhookService === true && stored.webhookServiceConfig.triggers === undefined) {
    base = {
      ...stored,
      webhookServiceConfig: {
        ...stored.webhookServiceConfig,
        enableDataProtection: false,
        triggers: {
          ...allOn(STANDARD_COMMENT_TRIGGERS),
          'comment_annotation.suggestion_accept': false,
          'comment_annotation.suggestion_reject': false,
          ...allOn(HUDDLE_TRIGGERS),
          'crdt.update_data': false,
          'recorder.done': false,
        },
      },
    };
  }
  const next = deepMerge(base, sanitize(update));
  const service = next.webhookServiceConfig;
  if (service.encryptData === true) readPayloadKey(service.publicKey ?? '', 'data.webhookServiceConfig.publicKey');
  return next;
}

export interface BatchRule {
  readonly isEnabled: boolean;
  readonly batchWindowSeconds: number;
  readonly maxActivities: number;
}

export interface NotificationConfig {
  readonly useNotificationService: boolean;
  readonly notificationServiceConfig: {
    readonly triggers: { readonly comment: Triggers; readonly huddle: Triggers };
    readonly delayConfig: { readonly isEnabled: boolean; readonly delaySeconds: number };
    readonly batchConfig: { readonly document: BatchRule; readonly user: BatchRule };
  };
  /** Internal: set once the first enable has seeded triggers (not part of the view). */
  readonly seeded?: boolean;
}

export interface NotificationConfigUpdate {
  readonly useNotificationService?: boolean;
  readonly notificationServiceConfig?: unknown;
}

export const DEFAULT_NOTIFICATION_CONFIG: NotificationConfig = {
  useNotificationService: false,
  notificationServiceConfig: {
    triggers: { comment: {}, huddle: {} },
    delayConfig: { isEnabled: false, delaySeconds: 10 },
    batchConfig: {
      document: { isEnabled: false, batchWindowSeconds: 10, maxActivities: 2 },
      user: { isEnabled: false, batchWindowSeconds: 10, maxActivities: 2 },
    },
  },
};

/** Upstream 2.6: the first enable seeds standard comment + all huddle triggers; delay and batching stay off. Ranges are in the schema. */
export function updateNotificationConfig(stored: NotificationConfig, update: NotificationConfigUpdate): NotificationConfig {
  let base = stored;
  if (update.useNotificationService === true && stored.seeded !== true) {
    base = {
      ...stored,
      seeded: true,
      notificationServiceConfig: {
        ...stored.notificationServiceConfig,
        triggers: { comment: allOn(STANDARD_COMMENT_TRIGGERS), huddle: allOn(HUDDLE_TRIGGER_NAMES) },
      },
    };
  }
  return deepMerge(base, sanitize(update));
}

export function viewNotificationConfig(config: NotificationConfig): Omit<NotificationConfig, 'seeded'> {
  return { useNotificationService: config.useNotificationService, notificationServiceConfig: config.notificationServiceConfig };
}

export interface AdvancedWebhookConfig {
  readonly isEnabled: boolean;
  readonly encryptData: boolean;
  readonly encodeData: boolean;
  readonly publicKey: string;
  readonly enableDataProtection: boolean;
}

export type AdvancedWebhookConfigUpdate = Partial<AdvancedWebhookConfig>;

export const DEFAULT_ADVANCED_WEBHOOK_CONFIG: AdvancedWebhookConfig = {
  isEnabled: false,
  encryptData: false,
  encodeData: false,
  publicKey: '',
  enableDataProtection: false,
};

/** Upstream 2.10: the first update must carry `isEnabled: true` (it provisions the endpoint store); later ones are partial. */
export function updateAdvancedWebhookConfig(stored: AdvancedWebhookConfig | undefined, update: AdvancedWebhookConfigUpdate): AdvancedWebhookConfig {
  if (stored === undefined && update.isEnabled !== true) {
    throw failedPrecondition('Advanced webhooks are not configured for this workspace: the first update must carry { "isEnabled": true }.');
  }
  const next = deepMerge(stored ?? DEFAULT_ADVANCED_WEBHOOK_CONFIG, sanitize(update));
  // Checked on every update that leaves encryption on, so a key change cannot leave deliveries without a usable key.
  if (next.encryptData) readPayloadKey(next.publicKey, 'data.publicKey');
  return next;
}
