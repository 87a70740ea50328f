// Owns REST forwarding between nodes: a request that needs a document another node owns is answered by that node.
import type { NatsConnection, Subscription } from 'nats';
import type { Logger } from '../log.js';
import { leaseKey } from './leases.js';

/** `plait.node.<node>.rest`: request/reply, one forwarded REST request. */
export const restSubject = (node: string): string => `plait.node.${leaseKey(node)}.rest`;

/** The header that stops a forwarded request from being forwarded again (src/http/route.ts reads it). */
const FORWARDED_HEADER = 'x-plait-forwarded';
/** A forwarded request waits this long for the owner (a REST write's own commit is well within it). */
const FORWARD_TIMEOUT_MS = 10_000;

interface Envelope {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The body as received, base64. */
  readonly body: string;
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/**
 * Both ends of forwarding. The sending node ships the request (path, auth headers, raw body) to the owner by NATS
 * request/reply. The owner answers it through its own HTTP listener on loopback, so the request goes through exactly
 * the authentication, validation and operation a direct request would, with the forwarded header set so that, if the
 * lease moved meanwhile, it answers UNAVAILABLE rather than forwarding in a loop.
 */
export class RestForwarding {
  private sub: Subscription | undefined;

  constructor(private readonly nc: NatsConnection, private readonly nodeId: string, private readonly log: Pick<Logger, 'warn'>) {}

  /** Sends `request` to `owner`; rejects when it does not answer in time (the caller answers UNAVAILABLE). */
  async forward(owner: string, request: { path: string; headers: Readonly<Record<string, string>>; body: Uint8Array }): Promise<Answer> {
    const envelope: Envelope = { path: request.path, headers: request.headers, body: Buffer.from(request.body).toString('base64') };
    const reply = await this.nc.request(restSubject(owner), new TextEncoder().encode(JSON.stringify(envelope)), { timeout: FORWARD_TIMEOUT_MS });
    return JSON.parse(new TextDecoder().decode(reply.data)) as Answer;
  }

  /** Answers requests forwarded to this node through its own listener at `baseUrl` (loopback). */
  serve(baseUrl: string): void {
    this.sub = this.nc.subscribe(restSubject(this.nodeId), {
      callback: (error, msg) => {
        if (error !== null) {
          this.log.warn('rest forwarding subscription error', { error: String(error) });
          return;
        }
        void this.answer(baseUrl, msg.data).then((answer) => msg.respond(new TextEncoder().encode(JSON.stringify(answer))));
      },
    });
  }

  private async answer(baseUrl: string, data: Uint8Array): Promise<Answer> {
    try {
      const envelope = JSON.parse(new TextDecoder().decode(data)) as Envelope;
      if (typeof envelope.path !== 'string' || !envelope.path.startsWith('/')) throw new Error('a forwarded request without a path');
      const response = await fetch(`${baseUrl}${envelope.path}`, {
        method: 'POST',
        headers: { ...envelope.headers, [FORWARDED_HEADER]: '1' },
        body: Buffer.from(envelope.body, 'base64'),
      });
      const text = await response.text();
      return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as unknown) };
    } catch (error) {
      this.log.warn('answering a forwarded request failed', { error: String(error) });
      return { status: 503, body: { error: { status: 'UNAVAILABLE', message: 'the node that owns this document could not answer; retry shortly' } } };
    }
  }

  stop(): void {
    this.sub?.unsubscribe();
  }
}
