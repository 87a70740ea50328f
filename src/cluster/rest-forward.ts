// Owns REST forwarding between nodes: a request that needs a document another node owns is answered by that node.
import type { NatsConnection, Subscription } from 'nats';
import type { Logger } from '../log.js';
import { leaseKey } from './leases.js';

/** `plait.node.<node>.rest`: request/reply, one forwarded REST request. */
export const restSubject = (node: string): string => `plait.node.${leaseKey(node)}.rest`;

/** A forwarded request waits this long for the owner (a REST write's own commit is well within it). */
const FORWARD_TIMEOUT_MS = 10_000;

interface Envelope {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The body as received, base64. */
  readonly body: string;
  /** The client's address as the receiving node resolved it. */
  readonly ip: string;
}

/** A request as the serve step takes it (src/http/route.ts's ForwardedRequest). */
export interface ForwardedRequest {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly ip: string;
}

/** The owner's answer (src/http/serve.ts's Answer): status, envelope, extra headers such as retry-after. */
export interface ForwardedAnswer {
  readonly httpStatus: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** One path's serve step for a forwarded request; it never rejects (errors are answers). */
export type ForwardedHandler = (request: ForwardedRequest) => Promise<ForwardedAnswer>;

const unavailableAnswer = (message: string): ForwardedAnswer => ({ httpStatus: 503, body: { error: { status: 'UNAVAILABLE', message } }, headers: { 'retry-after': '1' } });

/**
 * Both ends of forwarding. The sending node ships the request (path, the headers the operation reads, raw body, the
 * client's address) to the owner by NATS request/reply. The owner runs it through the same serve step as a request
 * on its listener (authentication, validation, the operation; src/http/route.ts), in process: no HTTP in between.
 * A forwarded request is never forwarded again: if the lease moved meanwhile, the owner answers UNAVAILABLE.
 */
export class RestForwarding {
  private sub: Subscription | undefined;

  constructor(private readonly nc: NatsConnection, private readonly nodeId: string, private readonly log: Pick<Logger, 'warn'>) {}

  /** Sends `request` to `owner`; rejects when it does not answer in time (the caller answers UNAVAILABLE). */
  async forward(owner: string, request: ForwardedRequest): Promise<ForwardedAnswer> {
    const envelope: Envelope = { path: request.path, headers: request.headers, body: Buffer.from(request.body).toString('base64'), ip: request.ip };
    const reply = await this.nc.request(restSubject(owner), new TextEncoder().encode(JSON.stringify(envelope)), { timeout: FORWARD_TIMEOUT_MS });
    const answer = JSON.parse(new TextDecoder().decode(reply.data)) as ForwardedAnswer;
    if (typeof answer.httpStatus !== 'number') throw new Error('the owner answered without a status');
    return answer;
  }

  /** Answers requests forwarded to this node by the serve step of their path. */
  serve(byPath: ReadonlyMap<string, ForwardedHandler>): void {
    this.sub = this.nc.subscribe(restSubject(this.nodeId), {
      callback: (error, msg) => {
        if (error !== null) {
          this.log.warn('rest forwarding subscription error', { error: String(error) });
          return;
        }
        void this.answer(byPath, msg.data).then((answer) => msg.respond(new TextEncoder().encode(JSON.stringify(answer))));
      },
    });
  }

  private async answer(byPath: ReadonlyMap<string, ForwardedHandler>, data: Uint8Array): Promise<ForwardedAnswer> {
    try {
      const envelope = JSON.parse(new TextDecoder().decode(data)) as Envelope;
      if (typeof envelope.path !== 'string' || typeof envelope.body !== 'string' || typeof envelope.headers !== 'object' || envelope.headers === null) {
        throw new Error('a forwarded request without a path, headers or body');
      }
      const handler = byPath.get(envelope.path);
      if (handler === undefined) return { httpStatus: 404, body: { error: { status: 'NOT_FOUND', message: `no operation at POST ${envelope.path}` } } };
      return await handler({ path: envelope.path, headers: envelope.headers, body: Buffer.from(envelope.body, 'base64'), ip: typeof envelope.ip === 'string' ? envelope.ip : '' });
    } catch (error) {
      this.log.warn('answering a forwarded request failed', { error: String(error) });
      return unavailableAnswer('the node that owns this document could not answer; retry shortly');
    }
  }

  stop(): void {
    this.sub?.unsubscribe();
  }
}
