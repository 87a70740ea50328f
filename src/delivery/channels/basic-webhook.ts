// Owns the basic webhook channel (upstream 3.1): POSTs to rawNotificationUrl and processedNotificationUrl with `Basic <authToken>`.
import type { WriteTx } from '../../store/env.js';
import { isCommentEvent, type EventType, type OutboxEvent } from '../../events/types.js';
import type { DeliveryConfigStore } from '../../tenant/delivery-config-store.js';
import { triggerOn } from '../../tenant/triggers.js';
import { BASIC_RETRY_DELAYS_MS, errorText, type Planner } from '../channel.js';
import { OutboundError, type OutboundHttp } from '../outbound/http.js';
import { webhookBody, webhookV1Payload } from '../payloads.js';
import type { DeliveryJob, DeliveryQueue } from '../queue.js';
import { recipientsOf } from '../recipients.js';
import type { AttemptResult, ChannelRunner } from '../runner.js';
import { fill, headlineTemplate, templateValues } from '../templates.js';

export interface BasicWebhookJobPayload {
  readonly which: 'raw' | 'processed';
  readonly body: string;
}

export interface BasicWebhookDeps {
  readonly configs: DeliveryConfigStore;
  readonly queue: DeliveryQueue;
  readonly http: OutboundHttp;
}

export class BasicWebhookChannel implements Planner, ChannelRunner {
  readonly name = 'webhook';
  readonly retryDelaysMs = BASIC_RETRY_DELAYS_MS;

  constructor(private readonly deps: BasicWebhookDeps) {}

  wants(apiKey: string, type: EventType): boolean {
    const config = this.deps.configs.webhook(apiKey);
    return config.useWebhookService && triggerOn(config.webhookServiceConfig.triggers, type);
  }

  plan(tx: WriteTx, event: OutboxEvent, now: number): void {
    if (!this.wants(event.apiKey, event.type)) return;
    const service = this.deps.configs.webhook(event.apiKey).webhookServiceConfig;
    const raw = webhookV1Payload(event);
    // Upstream documents only the labels: "raw" is the event as it happened; "processed" adds what Plait resolved
    // from a comment event (the rendered headline and the users it concerns); a crdt event has nothing to add.
    const processed = !isCommentEvent(event.type)
      ? raw
      : {
          ...raw,
          displayHeadlineMessage: fill(headlineTemplate(event.type), templateValues(event)),
          notifyUsers: recipientsOf(event).map((r) => ({ userId: r.userId, reason: r.reason, ...(r.email === undefined ? {} : { email: r.email }) })),
        };
    const targets: Array<[BasicWebhookJobPayload['which'], string, Record<string, unknown>]> = [
      ['raw', service.rawNotificationUrl, raw],
      ['processed', service.processedNotificationUrl, processed],
    ];
    for (const [which, url, body] of targets) {
      if (url === '') continue;
      const payload: BasicWebhookJobPayload = { which, body: webhookBody(body, service, 'webhookServiceConfig.publicKey') };
      this.deps.queue.enqueue(tx, { id: `${event.id}:webhook:${which}`, channel: 'webhook', apiKey: event.apiKey, target: `webhook:${event.apiKey}:${which}`, due: now, createdAt: now, organizationId: event.organizationId, documentId: event.documentId, payload });
    }
  }

  /** URL and token are read at send time: a corrected URL fixes the retries too. */
  async attempt(job: DeliveryJob): Promise<AttemptResult> {
    const payload = job.payload as BasicWebhookJobPayload;
    const config = this.deps.configs.webhook(job.apiKey);
    const service = config.webhookServiceConfig;
    const url = payload.which === 'raw' ? service.rawNotificationUrl : service.processedNotificationUrl;
    if (!config.useWebhookService || url === '') return { ok: 'cancel', error: 'the basic webhook was turned off or its URL removed' };
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'Plait-Webhooks/1' };
    if (service.authToken !== '') headers.authorization = `Basic ${service.authToken}`;
    try {
      const response = await this.deps.http.request({ url, method: 'POST', headers, body: payload.body, timeoutMs: 15_000, maxBytes: 64 * 1024, maxRedirects: 0 });
      if (response.status >= 200 && response.status < 300) return { ok: true };
      return { ok: false, error: `HTTP ${response.status}` };
    } catch (error) {
      const permanent = error instanceof OutboundError && (error.code === 'BLOCKED_ADDRESS' || error.code === 'BAD_URL');
      return { ok: false, error: errorText(error), permanent };
    }
  }
}
