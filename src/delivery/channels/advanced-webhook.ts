// Owns the advanced webhook channel: endpoint filtering, Standard Webhooks signing, per-endpoint rate limit, Svix retries.
import { randomUUID } from 'node:crypto';
import type { WriteTx } from '../../store/env.js';
import type { EventType, OutboxEvent } from '../../events/types.js';
import type { DeliveryConfigStore } from '../../tenant/delivery-config-store.js';
import { ADVANCED_RETRY_DELAYS_MS, errorText, type Planner } from '../channel.js';
import type { Clock } from '../clock.js';
import type { EndpointRecord, Endpoints, MessageRecord } from '../endpoints.js';
import { OutboundError, type OutboundHttp } from '../outbound/http.js';
import { webhookBody, webhookV2Payload } from '../payloads.js';
import type { DeliveryJob, DeliveryQueue } from '../queue.js';
import type { AttemptResult, ChannelRunner } from '../runner.js';
import { signedHeaders } from '../signing.js';

export interface AdvancedJobPayload {
  readonly endpointId: string;
  readonly messageId: string;
  readonly manual?: boolean;
}

export interface AdvancedWebhookDeps {
  readonly configs: DeliveryConfigStore;
  readonly queue: DeliveryQueue;
  readonly endpoints: Endpoints;
  readonly http: OutboundHttp;
  readonly clock: Clock;
}

export const EXHAUSTED_EVENT = 'message.attempt.exhausted';
/** An endpoint whose every attempt failed for this long is disabled (upstream 5). */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000;
const TIMEOUT_MS = 15_000;

/** The channels (Svix message tags) of a Plait event: its organization and its document. */
export function eventChannels(event: OutboxEvent): string[] {
  return [event.organizationId, event.documentId];
}

/** The delivery target of an endpoint's jobs (the runner's concurrency, pacing and proof key). */
export function endpointTarget(endpointId: string): string {
  return `adv:${endpointId}`;
}

export function endpointWants(endpoint: EndpointRecord, type: string, channels: readonly string[] | null): boolean {
  if (endpoint.disabled) return false;
  if (endpoint.filterTypes !== null && !endpoint.filterTypes.includes(type)) return false;
  if (endpoint.channels !== null && channels !== null && !endpoint.channels.some((c) => channels.includes(c))) return false;
  return true;
}

interface AttemptDetail {
  readonly status: number | null;
  readonly response: string;
  readonly timestamp: number;
  readonly url: string;
}

export class AdvancedWebhookChannel implements Planner, ChannelRunner {
  readonly name = 'advancedWebhook';
  readonly retryDelaysMs = ADVANCED_RETRY_DELAYS_MS;
  /**
   * Earliest time the next delivery to an endpoint may start (rate limit: delayed, never dropped), oldest set first.
   * A slot in the past says what no entry says, so they are dropped (`pace`): every endpoint with a rate limit that
   * was ever sent to stayed, deleted ones too (bench/README.md, "Twentieth session: endpoint churn memory").
   */
  private readonly nextSlot = new Map<string, number>();
  private readonly details = new Map<string, AttemptDetail>();

  constructor(private readonly deps: AdvancedWebhookDeps) {}

  /** Every type while enabled: which endpoints subscribe to which types is read when planning. */
  wants(apiKey: string, _type: EventType): boolean {
    return this.deps.configs.stored(apiKey, 'advancedWebhook')?.isEnabled === true;
  }

  plan(tx: WriteTx, event: OutboxEvent, now: number): void {
    const config = this.deps.configs.stored(event.apiKey, 'advancedWebhook');
    if (config === undefined || !config.isEnabled) return;
    const messageId = `msg_${event.id.replace(/^evt_/, '')}`;
    const body = webhookBody(webhookV2Payload(event, messageId), config, 'publicKey');
    const channels = eventChannels(event);
    const message = { id: messageId, eventType: event.type, eventId: event.id, body };
    const about = { organizationId: event.organizationId, documentId: event.documentId };
    let bodyKept = false;
    for (const endpoint of this.deps.endpoints.all(event.apiKey)) {
      if (!endpointWants(endpoint, event.type, channels)) continue;
      bodyKept = this.enqueueMessage(tx, event.apiKey, endpoint, message, now, about, bodyKept) || bodyKept;
    }
  }

  /**
   * Answers whether it wrote (the message's body is then stored, in this transaction). A replan (a crash before the
   * planning commit, another node taking the worker role within the lease) finds the job: its row is written with the
   * message and outlives the outbox lease (DeliveryQueue.prune), so it is what says the endpoint has the message.
   */
  private enqueueMessage(
    tx: WriteTx,
    apiKey: string,
    endpoint: EndpointRecord,
    message: Pick<MessageRecord, 'id' | 'eventType' | 'eventId' | 'body'>,
    now: number,
    about: Pick<DeliveryJob, 'organizationId' | 'documentId'> = {},
    bodyKept = false,
  ): boolean {
    const payload: AdvancedJobPayload = { endpointId: endpoint.id, messageId: message.id };
    if (!this.deps.queue.enqueue(tx, { id: `${message.id}:${endpoint.id}`, channel: 'advancedWebhook', apiKey, target: endpointTarget(endpoint.id), due: now, createdAt: now, ...about, payload })) return false;
    this.deps.endpoints.addMessage(tx, apiKey, { ...message, endpointId: endpoint.id, createdAt: now, status: 'pending', attempts: [], resends: 0 }, bodyKept);
    return true;
  }

  /** A manual resend: one attempt now, outside the retry schedule (Plait extension). */
  resend(tx: WriteTx, apiKey: string, message: MessageRecord, now: number): string {
    const jobId = `${message.id}:${message.endpointId}:resend-${message.resends + 1}`;
    this.deps.endpoints.putMessage(tx, apiKey, { ...message, status: 'pending', resends: message.resends + 1 });
    const payload: AdvancedJobPayload = { endpointId: message.endpointId, messageId: message.id, manual: true };
    this.deps.queue.enqueue(tx, { id: jobId, channel: 'advancedWebhook', apiKey, target: endpointTarget(message.endpointId), due: now, createdAt: now, payload });
    return jobId;
  }

  async attempt(job: DeliveryJob): Promise<AttemptResult> {
    const payload = job.payload as AdvancedJobPayload;
    const endpoint = this.deps.endpoints.get(job.apiKey, payload.endpointId);
    const message = this.deps.endpoints.message(job.apiKey, payload.endpointId, payload.messageId);
    if (endpoint === undefined || message === undefined) return { ok: 'cancel', error: 'the endpoint was deleted' };
    if (endpoint.disabled) return { ok: 'cancel', error: 'the endpoint is disabled' };
    const now = this.deps.clock.now();
    if (endpoint.rateLimit !== null) {
      const slot = this.nextSlot.get(endpoint.id) ?? now;
      if (slot > now) return { ok: 'later', at: slot };
      this.pace(endpoint.id, Math.max(slot, now) + Math.ceil(1000 / endpoint.rateLimit), now);
    }
    const timestamp = Math.floor(now / 1000);
    const headers = { 'content-type': 'application/json', 'user-agent': 'Plait-Webhooks/1', ...signedHeaders(this.deps.endpoints.secret(endpoint), message.id, timestamp, message.body) };
    try {
      const response = await this.deps.http.request({ url: endpoint.url, method: 'POST', headers, body: message.body, timeoutMs: TIMEOUT_MS, maxBytes: 64 * 1024, maxRedirects: 0 });
      this.details.set(job.id, { status: response.status, response: response.body.toString('utf8').slice(0, 1024), timestamp: now, url: endpoint.url });
      if (response.status >= 200 && response.status < 300) return { ok: true };
      return { ok: false, error: `HTTP ${response.status}`, permanent: payload.manual === true };
    } catch (error) {
      this.details.set(job.id, { status: null, response: errorText(error), timestamp: now, url: endpoint.url });
      const permanent = payload.manual === true || (error instanceof OutboundError && error.code === 'BAD_URL');
      return { ok: false, error: errorText(error), permanent };
    }
  }

  /** Endpoints whose next slot is remembered (for tests: it stays within the rate-limited endpoints sent to in the last second). */
  get pacedEndpoints(): number {
    return this.nextSlot.size;
  }

  /**
   * Sets an endpoint's next slot, at the end of the order, and drops the oldest entries whose slot has passed. A slot
   * is at most 1 s ahead when set (`rateLimit` ≥ 1), so what stays was set within about the last second.
   */
  private pace(endpointId: string, slot: number, now: number): void {
    this.nextSlot.delete(endpointId);
    this.nextSlot.set(endpointId, slot);
    for (const [id, at] of this.nextSlot) {
      if (at > now) break;
      this.nextSlot.delete(id);
    }
  }

  /** The endpoint was deleted while its attempt was out (read in the settlement's transaction, after any deletion that committed). */
  targetGone(job: DeliveryJob): boolean {
    return this.deps.endpoints.get(job.apiKey, (job.payload as AdvancedJobPayload).endpointId) === undefined;
  }

  settled(tx: WriteTx, next: DeliveryJob, result: AttemptResult, now: number): void {
    if (result.ok === 'later') return;
    const payload = next.payload as AdvancedJobPayload;
    if (result.ok === 'cancel') {
      // Nothing was sent (the endpoint is disabled): the message ends `fail` with the attempts it had. Left `pending`, it
      // stayed so for good, and the retention pass, which keeps pending messages, never removed it.
      const message = this.deps.endpoints.message(next.apiKey, payload.endpointId, payload.messageId);
      if (message?.status === 'pending') this.deps.endpoints.putMessage(tx, next.apiKey, { ...message, status: 'fail' });
      return;
    }
    const detail = this.details.get(next.id);
    this.details.delete(next.id);
    const endpoints = this.deps.endpoints;
    const message = endpoints.message(next.apiKey, payload.endpointId, payload.messageId);
    const endpoint = endpoints.get(next.apiKey, payload.endpointId);
    if (message === undefined || endpoint === undefined) return;
    const status = result.ok === true ? 'success' : next.state === 'failed' || next.state === 'cancelled' ? 'fail' : 'pending';
    const updated: MessageRecord = {
      ...message,
      status,
      attempts: [
        ...message.attempts,
        {
          id: `atmpt_${randomUUID().replaceAll('-', '')}`,
          timestamp: new Date(detail?.timestamp ?? now).toISOString(),
          attempt: message.attempts.length + 1,
          url: detail?.url ?? endpoint.url,
          status: result.ok === true ? 'success' : 'fail',
          responseStatusCode: detail?.status ?? null,
          response: detail?.response ?? (result.ok === true ? '' : result.error),
          trigger: payload.manual === true ? 'manual' : 'scheduled',
        },
      ],
    };
    endpoints.putMessage(tx, next.apiKey, updated);
    if (result.ok === true) {
      if (endpoint.failingSince !== null) endpoints.put(tx, next.apiKey, { ...endpoint, failingSince: null });
      return;
    }
    const failingSince = endpoint.failingSince ?? now;
    const disable = now - failingSince >= DISABLE_AFTER_MS;
    endpoints.put(tx, next.apiKey, {
      ...endpoint,
      failingSince,
      ...(disable ? { disabled: true, disabledReason: 'every delivery failed for 5 days' } : {}),
    });
    if (next.state === 'failed' && payload.manual !== true) this.exhausted(tx, next.apiKey, endpoint, updated, now);
  }

  /** `message.attempt.exhausted` to the other endpoints that subscribe to it by name. */
  private exhausted(tx: WriteTx, apiKey: string, failed: EndpointRecord, message: MessageRecord, now: number): void {
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const last = message.attempts.at(-1);
    const body = JSON.stringify({
      type: EXHAUSTED_EVENT,
      data: { endpointId: failed.id, msgId: message.id, msgEventId: message.eventId, eventType: message.eventType, lastAttempt: last === undefined ? null : { id: last.id, timestamp: last.timestamp, responseStatusCode: last.responseStatusCode } },
    });
    let bodyKept = false;
    for (const endpoint of this.deps.endpoints.all(apiKey)) {
      if (endpoint.id === failed.id || endpoint.filterTypes === null || !endpointWants(endpoint, EXHAUSTED_EVENT, null)) continue;
      bodyKept = this.enqueueMessage(tx, apiKey, endpoint, { id, eventType: EXHAUSTED_EVENT, eventId: message.eventId, body }, now, {}, bodyKept) || bodyKept;
    }
  }

  after(): void {
    // Follow-up messages (exhaustion) wake the runner like any enqueue.
    this.deps.queue.notify();
  }
}
