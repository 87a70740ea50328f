// Owns DB.deliveryConfigs: reading each delivery config with its defaults and updating it in one transaction.
import type { Database, Key } from 'lmdb';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import {
  DEFAULT_BASIC_WEBHOOK_CONFIG,
  DEFAULT_EMAIL_CONFIG,
  DEFAULT_NOTIFICATION_CONFIG,
  type ActivityConfig,
  type AdvancedWebhookConfig,
  type BasicWebhookConfig,
  type EmailConfig,
  type NotificationConfig,
} from './delivery-configs.js';

export interface DeliveryConfigKinds {
  email: EmailConfig;
  activity: ActivityConfig;
  webhook: BasicWebhookConfig;
  notification: NotificationConfig;
  advancedWebhook: AdvancedWebhookConfig;
}

export type DeliveryConfigKind = keyof DeliveryConfigKinds;

/** Per API key (a workspace's configs are per key, as the API-key config is). Never-configured reads give undefined. */
export class DeliveryConfigStore {
  private readonly db: Database<unknown, Key>;

  constructor(private readonly store: Store) {
    this.db = store.records<unknown>(DB.deliveryConfigs);
  }

  stored<K extends DeliveryConfigKind>(apiKey: string, kind: K): DeliveryConfigKinds[K] | undefined {
    return this.db.get([apiKey, kind]) as DeliveryConfigKinds[K] | undefined;
  }

  email(apiKey: string): EmailConfig {
    return this.stored(apiKey, 'email') ?? DEFAULT_EMAIL_CONFIG;
  }

  webhook(apiKey: string): BasicWebhookConfig {
    return this.stored(apiKey, 'webhook') ?? DEFAULT_BASIC_WEBHOOK_CONFIG;
  }

  notification(apiKey: string): NotificationConfig {
    return this.stored(apiKey, 'notification') ?? DEFAULT_NOTIFICATION_CONFIG;
  }

  /** Reads, applies `change` and writes in one transaction; a throwing `change` writes nothing. */
  async update<K extends DeliveryConfigKind>(apiKey: string, kind: K, change: (stored: DeliveryConfigKinds[K] | undefined) => DeliveryConfigKinds[K]): Promise<DeliveryConfigKinds[K]> {
    return this.store.transaction(() => {
      const next = change(this.stored(apiKey, kind));
      this.db.putSync([apiKey, kind], next);
      return next;
    });
  }

  /** Removes every config of an API key (API key deletion). */
  async removeAll(apiKey: string): Promise<void> {
    await this.store.transaction(() => {
      for (const key of this.db.getKeys({ start: [apiKey], end: [apiKey, '\uffff'] })) this.db.removeSync(key);
    });
  }
}
