// Owns DB.deliveryConfigs: reading each delivery config with its defaults and updating it in one transaction.
import type { Database, Key } from 'lmdb';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { ScopedMemo } from '../scoped-memo.js';
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

/** What a copy holds for a config never configured (one Map lookup, not has() then get()). */
const ABSENT = Symbol('absent');

/** Configs read, by kind and API key (ABSENT for a config never configured). */
type Copies = Map<DeliveryConfigKind, Map<string, unknown>>;

/** How many API keys' configs of one kind `current` keeps. */
const MAX_KEPT = 10_000;

/** Per API key (a workspace's configs are per key, as the API-key config is). Never-configured reads give undefined. */
export class DeliveryConfigStore {
  private readonly db: Database<unknown, Key>;
  /** While `memoized` runs: what each read gave. */
  private readonly memo = new ScopedMemo<DeliveryConfigKind, Map<string, unknown>>();
  /** What `current` read, kept until a config may have changed (`changed`). */
  private readonly kept: Copies = new Map();
  private readonly changedListeners: Array<() => void> = [];

  constructor(private readonly store: Store) {
    this.db = store.records<unknown>(DB.deliveryConfigs);
  }

  /**
   * A config read through a copy kept until a config may have changed (dropped by `changed`, as the audience's
   * answers are): for what every comment asks, the recorders of `Outbox.raise`, where a read is an LMDB read and a
   * decode per event. Past MAX_KEPT API keys of a kind, that kind's copies are all dropped: a bound on memory, not a
   * policy.
   */
  current<K extends DeliveryConfigKind>(apiKey: string, kind: K): DeliveryConfigKinds[K] | undefined {
    return this.through(this.kept, apiKey, kind, MAX_KEPT);
  }

  stored<K extends DeliveryConfigKind>(apiKey: string, kind: K): DeliveryConfigKinds[K] | undefined {
    const memo = this.memo.current;
    if (memo === undefined) return this.db.get([apiKey, kind]) as DeliveryConfigKinds[K] | undefined;
    return this.through(memo, apiKey, kind, Infinity);
  }

  /** The config from `copies`, read from the database and kept there when missing. */
  private through<K extends DeliveryConfigKind>(copies: Copies, apiKey: string, kind: K, max: number): DeliveryConfigKinds[K] | undefined {
    let byKey = copies.get(kind);
    if (byKey === undefined) copies.set(kind, (byKey = new Map()));
    const known = byKey.get(apiKey);
    if (known !== undefined) return known === ABSENT ? undefined : (known as DeliveryConfigKinds[K]);
    const config = this.db.get([apiKey, kind]) as DeliveryConfigKinds[K] | undefined;
    if (byKey.size >= max) byKey.clear();
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
    return this.memo.run(body);
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
