// Owns the in-app notification channel: triggers, user preferences, delay (delayConfig) and batching (batchConfig) per document or user.
import { commentData } from '../comment-event.js';
import { createHash } from 'node:crypto';
import type { WriteTx } from '../../store/env.js';
import { isCommentEvent, type EventRecorder, type EventType, type OutboxEvent, type StampedEvent } from '../../events/types.js';
import type { DeliveryConfigStore } from '../../tenant/delivery-config-store.js';
import { DEFAULT_NOTIFICATION_CONFIG, type NotificationConfig } from '../../tenant/delivery-configs.js';
import { triggerOn } from '../../tenant/triggers.js';
import type { Planner } from '../channel.js';
import { prefAllows, type NotificationRecord, type NotificationStore } from '../notification-store.js';
import { eventRecordKeysFit } from '../organization-records.js';
import type { DeliveryJob, DeliveryQueue } from '../queue.js';
import { recipientsOf, type Recipient } from '../recipients.js';
import type { AttemptResult, ChannelRunner } from '../runner.js';
import { fill, headlineTemplate, templateValues } from '../templates.js';

interface BatchItem {
  readonly eventId: string;
  readonly type: string;
  readonly headline: string;
  readonly annotationId: string;
  readonly documentId: string;
  readonly actionUser: NotificationRecord['actionUser'];
  readonly timestamp: number;
}

type NotificationJobPayload =
  | { readonly kind: 'single'; readonly record: NotificationRecord }
  | { readonly kind: 'batch'; readonly scope: 'document' | 'user'; readonly organizationId: string; readonly documentId: string; readonly items: BatchItem[]; readonly users: Record<string, true>; readonly maxActivities: number; readonly delayMs: number };

const SECOND = 1000;

/** Notification ids allow only letters, digits, `_` and `-` (upstream 5). */
export function notificationId(seed: string): string {
  return `ntf_${createHash('sha256').update(seed).digest('base64url').slice(0, 24).replaceAll('-', '_')}`;
}

/** Whether `config` notifies of events of `type`: the service on, with the comment trigger on for it. */
function notifies(config: NotificationConfig, type: EventType): boolean {
  return isCommentEvent(type) && config.useNotificationService && triggerOn(config.notificationServiceConfig.triggers.comment, type);
}

/** Sent as soon as the event is: neither delayed nor batched. */
function atOnce(config: NotificationConfig): boolean {
  const { delayConfig, batchConfig } = config.notificationServiceConfig;
  return !delayConfig.isEnabled && !batchConfig.document.isEnabled && !batchConfig.user.isEnabled;
}

export class NotificationChannel implements Planner, ChannelRunner {
  readonly name = 'notification';
  /** A local write; retried quickly if LMDB refuses it. */
  readonly retryDelaysMs: readonly number[] = [1_000, 10_000, 60_000];

  /**
   * The outbox's recorder of notifications sent at once (no delay, no batching, the default): written in the
   * transaction of the change that raised the event (`Outbox.raise`), so such an event needs no outbox row for them.
   * Delayed and batched ones are jobs, planned by the dispatcher from the row (`dispatches`).
   */
  readonly recorder: EventRecorder = {
    name: this.name,
    wants: (apiKey, type) => {
      const config = this.current(apiKey);
      return notifies(config, type) && atOnce(config);
    },
    record: (tx, event) => {
      const recipients = this.recipients(event);
      // At the event's raise: its id (from the new event's) is on no stored notification.
      if (recipients.length > 0) this.deps.notifications.putNew(tx, singleRecord(event, recipients));
    },
    // Its rows are keyed by the organization and `ntf_` with the event id's hex (singleRecord); the preference reads
    // keyed by a recipient's id cannot throw (lmdb-js answers undefined for a key too long to exist).
    bounded: (apiKey, organizationId) => eventRecordKeysFit(apiKey, organizationId),
  };

  constructor(private readonly deps: { readonly configs: DeliveryConfigStore; readonly queue: DeliveryQueue; readonly notifications: NotificationStore }) {}

  wants(apiKey: string, type: EventType): boolean {
    return notifies(this.deps.configs.notification(apiKey), type);
  }

  /** Only delayed and batched notifications need the dispatcher; the recorder writes the others. */
  dispatches(apiKey: string, type: EventType): boolean {
    const config = this.current(apiKey);
    return notifies(config, type) && !atOnce(config);
  }

  /** Rows the recorder wrote its notification for are left alone; the others are planned as configured now. */
  plan(tx: WriteTx, event: OutboxEvent, now: number): void {
    if (event.recordedBy?.includes(this.name) === true || !this.wants(event.apiKey, event.type)) return;
    const config = this.deps.configs.notification(event.apiKey);
    const service = config.notificationServiceConfig;
    const recipients = this.recipients(event);
    if (recipients.length === 0) return;
    const delayMs = service.delayConfig.isEnabled ? service.delayConfig.delaySeconds * SECOND : 0;
    const { document, user } = service.batchConfig;
    if (document.isEnabled) {
      this.addToBatch(tx, event, now, config, 'document', `doc:${event.organizationId}:${event.documentId}`, recipients, delayMs);
    } else if (user.isEnabled) {
      for (const recipient of recipients) this.addToBatch(tx, event, now, config, 'user', `user:${event.organizationId}:${recipient.userId}`, [recipient], delayMs);
    } else {
      const record = singleRecord(event, recipients);
      if (delayMs === 0) this.deps.notifications.put(tx, record);
      else this.deps.queue.enqueue(tx, { id: `${event.id}:notification`, channel: 'notification', apiKey: event.apiKey, target: `notification:${event.apiKey}`, due: now + delayMs, createdAt: now, organizationId: event.organizationId, documentId: event.documentId, payload: { kind: 'single', record } satisfies NotificationJobPayload });
    }
  }

  /** One open batch per scope key: the first event opens it (due at window end + delay), `maxActivities` flushes it at once. */
  private addToBatch(tx: WriteTx, event: OutboxEvent, now: number, config: NotificationConfig, scope: 'document' | 'user', key: string, recipients: readonly Recipient[], delayMs: number): void {
    const rule = config.notificationServiceConfig.batchConfig[scope];
    const id = `nbatch:${event.apiKey}:${key}`;
    const item: BatchItem = {
      eventId: event.id,
      type: event.type,
      headline: fill(headlineTemplate(event.type), templateValues(event)),
      annotationId: commentData(event).commentAnnotation.annotationId,
      documentId: event.documentId,
      actionUser: commentData(event).actionUser ?? null,
      timestamp: event.createdAt,
    };
    const users = Object.fromEntries(recipients.map((r) => [r.userId, true as const]));
    const open = this.deps.queue.get(id);
    if (open === undefined || open.state !== 'pending') {
      if (open !== undefined) this.deps.queue.remove(tx, id);
      const payload: NotificationJobPayload = { kind: 'batch', scope, organizationId: event.organizationId, documentId: event.documentId, items: [item], users, maxActivities: rule.maxActivities, delayMs };
      // A per-user batch spans documents: only its items name theirs.
      const about = scope === 'document' ? { organizationId: event.organizationId, documentId: event.documentId } : { organizationId: event.organizationId };
      this.deps.queue.enqueue(tx, { id, channel: 'notification', apiKey: event.apiKey, target: `notification:${event.apiKey}`, due: now + rule.batchWindowSeconds * SECOND + delayMs, createdAt: now, ...about, payload });
      return;
    }
    const payload = open.payload as Extract<NotificationJobPayload, { kind: 'batch' }>;
    if (payload.items.some((existing) => existing.eventId === event.id)) return;
    const items = [...payload.items, item];
    const full = items.length >= payload.maxActivities;
    this.deps.queue.replace(tx, { ...open, due: full ? Math.min(open.due, now + payload.delayMs) : open.due, payload: { ...payload, items, users: { ...payload.users, ...users } } });
  }

  /** The config through the copy the config store keeps (`DeliveryConfigStore.current`): every comment asks. */
  private current(apiKey: string): NotificationConfig {
    return this.deps.configs.current(apiKey, 'notification') ?? DEFAULT_NOTIFICATION_CONFIG;
  }

  /** Who is told of the event in-app: those concerned whose inbox preference lets it through. */
  private recipients(event: StampedEvent): Recipient[] {
    return recipientsOf(event).filter((r) => prefAllows(this.deps.notifications.prefsOf(event.apiKey, event.organizationId, r.userId, event.documentId).inbox, r.reason));
  }

  /** Nothing to send: the notification is written with the settlement (`settled`). */
  attempt(): Promise<AttemptResult> {
    return Promise.resolve({ ok: true });
  }

  /**
   * Writes the notification in the settlement's transaction, so a job cancelled meanwhile (its document deleted)
   * writes nothing. A flushed batch frees its id, so the next event opens a new window.
   */
  settled(tx: WriteTx, next: DeliveryJob): void {
    if (next.state !== 'delivered') return;
    const payload = next.payload as NotificationJobPayload;
    this.deps.notifications.put(tx, payload.kind === 'single' ? payload.record : batchRecord(next, payload));
    if (payload.kind === 'batch') this.deps.queue.remove(tx, next.id);
  }
}

function singleRecord(event: StampedEvent, recipients: readonly Recipient[]): NotificationRecord {
  const users = Object.fromEntries(recipients.map((r) => [r.userId, true as const]));
  const data = commentData(event);
  return {
    // From the event id as activity ids are: unique, the same on a replan, and time first (src/ids.ts), so a user's
    // notifications are written in time order instead of at a hash's random place in the organization's range.
    id: `ntf_${event.id.replace(/^evt_/, '')}`,
    notificationSource: 'comment',
    notificationSourceData: { commentAnnotation: data.commentAnnotation, ...(data.targetComment === undefined ? {} : { targetComment: data.targetComment }), eventType: event.type },
    actionUser: data.actionUser ?? null,
    displayBodyMessage: data.targetComment?.commentText ?? '',
    displayHeadlineMessageTemplate: headlineTemplate(event.type),
    displayHeadlineMessageTemplateData: { ...templateValues(event), ...(data.actionUser === undefined ? {} : { actionUser: data.actionUser }) },
    metadata: { apiKey: event.apiKey, documentId: event.documentId, organizationId: event.organizationId },
    notifyUsers: users,
    notifyUsersByUserId: users,
    notifyAll: false,
    ...(data.commentAnnotation.location?.id === undefined ? {} : { locationId: data.commentAnnotation.location.id }),
    readByUserIds: [],
    timestamp: event.createdAt,
  };
}

function batchRecord(job: DeliveryJob, payload: Extract<NotificationJobPayload, { kind: 'batch' }>): NotificationRecord {
  const last = payload.items.at(-1);
  const actors = new Set(payload.items.map((i) => i.actionUser?.userId ?? ''));
  const count = payload.items.length;
  return {
    id: notificationId(`${job.id}:${job.createdAt}`),
    notificationSource: 'comment',
    notificationSourceData: { batch: { scope: payload.scope, count, items: payload.items } },
    actionUser: last?.actionUser ?? null,
    displayBodyMessage: payload.items.map((i) => i.headline).join('\n'),
    displayHeadlineMessageTemplate: actors.size > 1 ? '{actionUser} and others made {count} updates' : '{actionUser} made {count} updates',
    displayHeadlineMessageTemplateData: { count: String(count), ...(last?.actionUser === null || last?.actionUser === undefined ? {} : { actionUser: last.actionUser }) },
    metadata: { apiKey: job.apiKey, documentId: payload.scope === 'document' ? payload.documentId : (last?.documentId ?? payload.documentId), organizationId: payload.organizationId },
    notifyUsers: payload.users,
    notifyUsersByUserId: payload.users,
    notifyAll: false,
    readByUserIds: [],
    timestamp: last?.timestamp ?? job.createdAt,
  };
}

