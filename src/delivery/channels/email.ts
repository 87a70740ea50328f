// Owns the email channel: which events become emails for whom (email config triggers), and sending them by config type.
import { createHash } from 'node:crypto';
import type { WriteTx } from '../../store/env.js';
import { isCommentEvent, type EventType, type OutboxEvent } from '../../events/types.js';
import type { DeliveryConfigStore } from '../../tenant/delivery-config-store.js';
import { triggerOn } from '../../tenant/triggers.js';
import { BASIC_RETRY_DELAYS_MS, errorText, type Planner } from '../channel.js';
import { EmailSendError, SendGridEmailTransport, parseSender, type EmailTransport } from '../outbound/email.js';
import type { OutboundHttp } from '../outbound/http.js';
import { prefAllows, type NotificationStore } from '../notification-store.js';
import type { DeliveryJob, DeliveryQueue } from '../queue.js';
import { recipientsOf } from '../recipients.js';
import type { AttemptResult, ChannelRunner } from '../runner.js';
import { renderEmail } from '../templates.js';

export interface EmailJobPayload {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

export interface EmailChannelDeps {
  readonly configs: DeliveryConfigStore;
  readonly queue: DeliveryQueue;
  /** The `default`/`custom` transport: SMTP_URL, or the dev log transport. */
  readonly server: EmailTransport;
  readonly http: OutboundHttp;
  readonly sendgridBaseUrl: string;
  /** EMAIL_FROM. */
  readonly emailFrom: string;
  /** Per-user channel preferences (notifications config/set): `email` NONE or MINE. */
  readonly prefs: Pick<NotificationStore, 'prefsOf'>;
}

export class EmailChannel implements Planner, ChannelRunner {
  readonly name = 'email';
  readonly retryDelaysMs = BASIC_RETRY_DELAYS_MS;

  constructor(private readonly deps: EmailChannelDeps) {}

  wants(apiKey: string, type: EventType): boolean {
    // Comment events only: an email is about a thread (its text, its mentions and assignee).
    if (!isCommentEvent(type)) return false;
    const config = this.deps.configs.email(apiKey);
    return config.useEmailService && triggerOn(config.emailServiceConfig.triggers, type);
  }

  plan(tx: WriteTx, event: OutboxEvent, now: number): void {
    if (!this.wants(event.apiKey, event.type)) return;
    const config = this.deps.configs.email(event.apiKey);
    for (const recipient of recipientsOf(event)) {
      if (recipient.email === undefined) continue;
      if (!prefAllows(this.deps.prefs.prefsOf(event.apiKey, event.organizationId, recipient.userId, event.documentId).email, recipient.reason)) continue;
      const rendered = renderEmail(event, recipient, config.emailServiceConfig.fromCompany);
      const payload: EmailJobPayload = { to: recipient.email, ...rendered };
      this.deps.queue.enqueue(tx, { id: `${event.id}:email:${recipient.userId}`, channel: 'email', apiKey: event.apiKey, target: `email:${event.apiKey}`, due: now, createdAt: now, organizationId: event.organizationId, documentId: event.documentId, payload });
    }
  }

  /** The sender and transport are read at send time, so a config change applies to retries too. */
  async attempt(job: DeliveryJob): Promise<AttemptResult> {
    const payload = job.payload as EmailJobPayload;
    const config = this.deps.configs.email(job.apiKey).emailServiceConfig;
    const fallback = parseSender(this.deps.emailFrom);
    const from = config.fromEmail === '' ? fallback.address : config.fromEmail;
    const fromName = config.fromCompany === '' ? fallback.name : config.fromCompany;
    const transport =
      config.type === 'sendgrid'
        ? new SendGridEmailTransport({ http: this.deps.http, apiKey: config.apiKey, baseUrl: this.deps.sendgridBaseUrl })
        : this.deps.server;
    try {
      await transport.send({ to: [payload.to], from, ...(fromName === undefined ? {} : { fromName }), subject: payload.subject, text: payload.text, html: payload.html, messageId: messageIdOf(job.id, from) });
      return { ok: true };
    } catch (error) {
      return { ok: false, error: errorText(error), permanent: error instanceof EmailSendError && error.permanent };
    }
  }
}

/** One Message-ID per delivery job (its id is derived from the event and recipient), the same on every attempt. */
export function messageIdOf(jobId: string, from: string): string {
  const domain = /@([A-Za-z0-9.-]+)$/.exec(from)?.[1] ?? 'plait.localhost';
  return `<${createHash('sha256').update(jobId).digest('hex').slice(0, 32)}@${domain}>`;
}
