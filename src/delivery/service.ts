// Owns the delivery room's wiring: stores, outbound adapters, channels, the dispatcher and the runner, started and stopped together.
import type { Secrets } from '../auth/secrets.js';
import type { Config } from '../config.js';
import { Outbox } from '../events/outbox.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DeliveryConfigStore } from '../tenant/delivery-config-store.js';
import { ActivityStore } from './activity-store.js';
import { DeliveryAudience } from './audience.js';
import { AccountEmailChannel, type AccountEmailDeps } from './channels/account-email.js';
import { ActivityChannel } from './channels/activity.js';
import { AdvancedWebhookChannel, endpointTarget } from './channels/advanced-webhook.js';
import { BasicWebhookChannel } from './channels/basic-webhook.js';
import { EmailChannel } from './channels/email.js';
import { NotificationChannel } from './channels/notification.js';
import { systemClock, type Clock } from './clock.js';
import { Dispatcher } from './dispatcher.js';
import { DeliveryDocumentData } from './document-data.js';
import { Endpoints } from './endpoints.js';
import { NotificationStore } from './notification-store.js';
import { createServerEmailTransport, type ClosableEmailTransport, type EmailTransport } from './outbound/email.js';
import { OutboundHttp } from './outbound/http.js';
import { ProvenTargets } from './proven-targets.js';
import { DeliveryQueue } from './queue.js';
import { DeliveryRunner } from './runner.js';

export interface DeliveryOptions {
  readonly config: Pick<Config, 'outboundAllowedNetworks' | 'smtpUrl' | 'emailFrom' | 'sendgridBaseUrl' | 'webhookMessageRetentionMs'>;
  readonly store: Store;
  readonly outbox: Outbox;
  readonly secrets: Secrets;
  readonly log: Logger;
  readonly clock?: Clock;
  /** Tests may hand in their own transport; default: from SMTP_URL. */
  readonly emailTransport?: EmailTransport;
  /** Whether this process runs the dispatcher and the queue now (the worker role); default: always. */
  readonly mayRun?: () => boolean;
  /** How often an idle dispatcher looks at the outbox (`DispatcherOptions.pollMs`). */
  readonly dispatcherPollMs?: number;
  /** Longest sleep of an idle runner between looks at the queue (`RunnerOptions.maxIdleMs`). */
  readonly runnerIdleMs?: number;
  /** The account emails' sender and links; their transport is the server's (SMTP_URL) unless a test hands in one. */
  readonly account: Omit<AccountEmailDeps, 'queue' | 'clock' | 'transport'> & { readonly transport?: EmailTransport };
}

export class Delivery {
  readonly clock: Clock;
  readonly store: Store;
  readonly configs: DeliveryConfigStore;
  readonly queue: DeliveryQueue;
  readonly endpoints: Endpoints;
  readonly notifications: NotificationStore;
  readonly activities: ActivityStore;
  readonly http: OutboundHttp;
  readonly advanced: AdvancedWebhookChannel;
  /** The account emails (owner verification, sign-in link): the queue AccountMail (src/tenant) writes to. */
  readonly account: AccountEmailChannel;
  readonly dispatcher: Dispatcher;
  readonly runner: DeliveryRunner;
  /** Which targets have had a successful attempt (the runner's, stored): an endpoint's deletion forgets its target's. */
  readonly proven: ProvenTargets;
  /** What the room holds about a document or organization, removed with it (a DocumentDataOwner; services.ts registers it). */
  readonly documentData: DeliveryDocumentData;
  private readonly serverEmail: ClosableEmailTransport | undefined;

  constructor(options: DeliveryOptions) {
    const { store, log } = options;
    this.clock = options.clock ?? systemClock;
    this.store = store;
    this.configs = new DeliveryConfigStore(store);
    this.queue = new DeliveryQueue(store);
    this.proven = new ProvenTargets(store);
    this.endpoints = new Endpoints(store, options.secrets, (tx, _apiKey, endpointId) => this.proven.forget(tx, endpointTarget(endpointId)));
    this.notifications = new NotificationStore(store);
    this.activities = new ActivityStore(store);
    this.http = new OutboundHttp({ allowedNetworks: options.config.outboundAllowedNetworks });
    this.serverEmail = options.emailTransport === undefined ? createServerEmailTransport({ smtpUrl: options.config.smtpUrl, log: log.child({ component: 'email' }) }) : undefined;
    const email = new EmailChannel({
      configs: this.configs,
      queue: this.queue,
      server: options.emailTransport ?? (this.serverEmail as ClosableEmailTransport),
      http: this.http,
      sendgridBaseUrl: options.config.sendgridBaseUrl,
      emailFrom: options.config.emailFrom,
      prefs: this.notifications,
    });
    const webhook = new BasicWebhookChannel({ configs: this.configs, queue: this.queue, http: this.http });
    this.advanced = new AdvancedWebhookChannel({ configs: this.configs, queue: this.queue, endpoints: this.endpoints, http: this.http, clock: this.clock });
    const notification = new NotificationChannel({ configs: this.configs, queue: this.queue, notifications: this.notifications });
    const activity = new ActivityChannel({ configs: this.configs, activities: this.activities });
    const accountTransport = options.account.transport ?? options.emailTransport ?? (this.serverEmail as ClosableEmailTransport);
    this.account = new AccountEmailChannel({ ...options.account, transport: accountTransport, queue: this.queue, clock: this.clock });
    const deliveryLog = log.child({ component: 'delivery' });
    const planners = [activity, notification, email, webhook, this.advanced];
    // Activity logs and notifications sent at once are written with the change that raises the event; an event gets
    // an outbox row only when the dispatcher must plan something for it (src/delivery/audience.ts). The dispatcher
    // still plans them for rows its recorders did not record (raised before they did).
    options.outbox.setRecorders([activity, notification.recorder]);
    options.outbox.setAudience(new DeliveryAudience(this.configs, planners));
    this.dispatcher = new Dispatcher({ store, outbox: options.outbox, queue: this.queue, planners, clock: this.clock, log: deliveryLog, planning: (body) => this.planning(body), ...(options.mayRun === undefined ? {} : { mayRun: options.mayRun }), ...(options.dispatcherPollMs === undefined ? {} : { pollMs: options.dispatcherPollMs }) });
    this.documentData = new DeliveryDocumentData({
      store,
      outbox: options.outbox,
      queue: this.queue,
      endpoints: this.endpoints,
      notifications: this.notifications,
      activities: this.activities,
      now: () => this.clock.now(),
    });
    const retentionMs = options.config.webhookMessageRetentionMs;
    this.runner = new DeliveryRunner({
      queue: this.queue,
      channels: { email, webhook, advancedWebhook: this.advanced, notification, account: this.account },
      clock: this.clock,
      log: deliveryLog,
      proven: this.proven,
      ...(options.mayRun === undefined ? {} : { mayRun: options.mayRun }),
      ...(options.runnerIdleMs === undefined ? {} : { maxIdleMs: options.runnerIdleMs }),
      ...(retentionMs === 0 ? {} : { pruneLogs: (now: number, limit: number) => this.endpoints.pruneMessages(now - retentionMs, limit) }),
    });
  }

  /**
   * The dispatcher's planning transaction, with what it reads again and again read once: each delivery config, each
   * key's endpoints, each target's head in the due index. Nothing else writes them while it runs.
   */
  private planning<T>(body: () => T): T {
    return this.configs.memoized(() => this.endpoints.memoized(() => this.queue.batched(body)));
  }

  /** Indexes the activity logs, notifications, webhook messages and finished jobs written before schema 4 by time, and pending jobs of schema 4 and older by target (once; a no-op after). */
  async buildIndexes(): Promise<void> {
    await this.activities.buildIndex();
    await this.notifications.buildIndex();
    await this.endpoints.buildIndex();
    await this.queue.buildFinishedIndex();
    await this.queue.buildTargetIndex();
  }

  /**
   * How full the room's queues are, for /metrics: the runner's figures (non-zero only where it runs: the worker role)
   * and the pending backlog read from the store's row counts, the same on every node of a cluster; `overdueMs`: how long
   * the earliest pending job has been due (0 when none is).
   */
  occupancy(): ReturnType<DeliveryRunner['occupancy']> & { readonly pending: number; readonly targetsPending: number; readonly overdueMs: number } {
    const backlog = this.queue.backlog();
    const overdueMs = backlog.earliestDue === undefined ? 0 : Math.max(0, this.clock.now() - backlog.earliestDue);
    return { ...this.runner.occupancy(), pending: backlog.jobs, targetsPending: backlog.targets, overdueMs };
  }

  start(): void {
    this.dispatcher.start();
    this.runner.start();
  }

  /** Stops dispatching and sending (attempts in flight settle) but keeps the transports: `start()` may follow. */
  async pause(): Promise<void> {
    await this.dispatcher.stop();
    await this.runner.stop();
  }

  /** Stops claiming and starting; attempts in flight settle (each bounded by its own timeout) before the store closes. */
  async stop(): Promise<void> {
    await this.dispatcher.stop();
    await this.runner.stop();
    this.serverEmail?.close();
    await this.http.close();
  }
}
