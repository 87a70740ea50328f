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

/** What the memo holds for a config never configured (one Map lookup, not has() then get()). */
const ABSENT = Symbol('absent');

/** How many (kind, API key) configs `current` keeps (10,000 API keys' worth of the two recorders'). */
const MAX_KEPT = 20_000;

/** Per API key (a workspace's configs are per key, as the API-key config is). Never-configured reads give undefined. */
export class DeliveryConfigStore {
  private readonly db: Database<unknown, Key>;
  /** While `memoized` runs: what each (kind, API key) read gave, ABSENT for a config never configured. */
  private memo: Map<DeliveryConfigKind, Map<string, unknown>> | undefined;
  /** What `current` read, kept until a config may have changed (`changed`); ABSENT for a config never configured. */
  private readonly kept = new Map<string, unknown>();
  private readonly changedListeners: Array<() => void> = [];

  constructor(private readonly store: Store) {
    this.db = store.records<unknown>(DB.deliveryConfigs);
  }

  /**
   * `stored`, read through a copy kept until a config may have changed (dropped by `changed`, as the audience's
   * answers are): for what every comment asks, the recorders of `Outbox.raise`, where a read is an LMDB read and a
   * decode per event. Past MAX_KEPT (kind, API key) pairs the copies are all dropped: a bound on memory, not a policy.
   */
  current<K extends DeliveryConfigKind>(apiKey: string, kind: K): DeliveryConfigKinds[K] | undefined {
    const id = `${kind}\u0000${apiKey}`;
    const known = this.kept.get(id);
    if (known !== undefined) return known === ABSENT ? undefined : (known as DeliveryConfigKinds[K]);
    const config = this.stored(apiKey, kind);
    if (this.kept.size >= MAX_KEPT) this.kept.clear();
    this.kept.set(id, config === undefined ? ABSENT : config);
    return config;
  }

  stored<K extends DeliveryConfigKind>(apiKey: string, kind: K): DeliveryConfigKinds[K] | undefined {
    const memo = this.memo;
    if (memo === undefined) return this.db.get([apiKey, kind]) as DeliveryConfigKinds[K] | undefined;
    let byKey = memo.get(kind);
    if (byKey === undefined) memo.set(kind, (byKey = new Map()));
    const cached = byKey.get(apiKey);
    if (cached !== undefined) return cached === ABSENT ? undefined : (cached as DeliveryConfigKinds[K]);
    const config = this.db.get([apiKey, kind]) as DeliveryConfigKinds[K] | undefined;
    byKey.set(apiKey, config === undefined ? ABSENT : config);
    return config;
  }

  /**
   * Runs `body` (synchronous) reading each config at most once: the dispatcher plans a round of up to 100 events, all
   * usually of one API key, inside one write transaction, and every planner read its config per event (five LMDB
   * reads per event, ~1.5% of a REST comment's CPU, bench/README.md "REST comment path, sixth session"). Nothing can
   * write a config while `body` runs (it holds the only write transaction and planners only read configs), so a read
   * repeated inside it would give the same row. Planners treat configs as read-only, so sharing the decoded object
   * between events changes nothing. A nested call runs inside the outer one's memo.
   */
  memoized<T>(body: () => T): T {
    if (this.memo !== undefined) return body();
    this.memo = new Map();
    try {
      return body();
    } finally {
      this.memo = undefined;
    }
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

  /** Registers a listener told whenever a config may have changed (what is derived from configs drops it). */
  onChanged(listener: () => void): void {
    this.changedListeners.push(listener);
  }

  /**
   * Tells the listeners that configs may have changed: this store's writes call it before they start and again once
   * they settled, and a cluster node's applier when another node's writes came in (src/replicated-caches.ts).
   */
  changed(): void {
    this.kept.clear();
    for (const listener of this.changedListeners) listener();
  }

  /** Reads, applies `change` and writes in one transaction; a throwing `change` writes nothing. */
  async update<K extends DeliveryConfigKind>(apiKey: string, kind: K, change: (stored: DeliveryConfigKinds[K] | undefined) => DeliveryConfigKinds[K]): Promise<DeliveryConfigKinds[K]> {
    return this.writing(() => this.store.transaction(() => {
      const next = change(this.stored(apiKey, kind));
      this.db.putSync([apiKey, kind], next);
      return next;
    }));
  }

  /** Removes every config of an API key (API key deletion). */
  async removeAll(apiKey: string): Promise<void> {
    await this.writing(() => this.store.transaction(() => {
      for (const key of this.db.getKeys({ start: [apiKey], end: [apiKey, '\uffff'] })) this.db.removeSync(key);
    }));
  }

  /** Runs a write with `changed()` before it and after it settles: what was derived in between may predate it. */
  private async writing<T>(write: () => Promise<T>): Promise<T> {
    this.changed();
    try {
      return await write();
    } finally {
      this.changed();
    }
  }
}
