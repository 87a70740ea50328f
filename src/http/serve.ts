// Owns the serve step of a REST request apart from uWS: authentication, origin policy, rate limits, validation, the operation, forwarding and the answer.
import { AppError, permissionDenied, resourceExhausted, toAppError, unavailable, unsupportedMediaType } from '../errors.js';
import type { Logger } from '../log.js';
import { limitRefusals, type RestInstrument } from '../metrics/instruments.js';
import { NotOwnerError } from '../doc/ownership.js';
import { errorEnvelope, successEnvelope } from '../edge/reply.js';
import { isJsonContentType, parseEnvelope } from './body.js';
import { rateLimitKey, type ClientAddresses } from './client-address.js';
import type { RequestGate } from './gate.js';
import type { RateLimits } from './rate-limit.js';
import type { ApiKeyIdentity, WorkspaceIdentity } from '../tenant/workspaces.js';
import type { Operation, RequestContext } from './operation.js';
import { validatorLoading, type Validator } from './validate.js';

/** A REST request as forwarded to a document's owner in a cluster (src/cluster/ implements the transport). */
export interface ForwardedRequest {
  readonly path: string;
  /** content-type, x-request-id and the credentials the operation's auth level reads. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** The client's address as the receiving node resolved it ('' when the operation did not need it). */
  readonly ip: string;
}

/** The credential checks the edge needs from the core. Each throws an AppError naming what is wrong. */
export interface Authenticator {
  workspace(workspaceId: string, token: string): WorkspaceIdentity;
  apiKey(apiKey: string, token: string): ApiKeyIdentity;
}

export interface RouteDeps {
  readonly auth: Authenticator;
  readonly log: Logger;
  readonly maxBodyBytes: number;
  readonly corsOrigin: string;
  readonly limits: RateLimits;
  /** Resolves the client address from the socket and, behind a trusted proxy, X-Forwarded-For. */
  readonly clientAddresses: ClientAddresses;
  /** Counts requests in flight; closed by a graceful stop, after which requests are answered UNAVAILABLE. */
  readonly gate: RequestGate;
  /** The API key's allowed web origins (domains operations): `refused` answers PERMISSION_DENIED, `listed` is echoed in CORS. */
  readonly originPolicy?: (apiKey: string, origin: string) => 'any' | 'listed' | 'refused';
  /** Cluster mode: a request that needs a document another node owns is answered by that node (docs/cluster.md). */
  readonly forward?: (owner: string, request: ForwardedRequest) => Promise<Answer>;
  /**
   * Cluster mode: catches up with the cluster's state log; true once done. A lookup that missed
   * (credentials, a record NOT_FOUND) is retried once after it, so what another node just wrote is found here at once.
   */
  readonly catchUp?: () => Promise<boolean>;
}

/** What the serve step answers; the uWS route writes it, a forwarded request sends it back to the node that asked. */
export interface Answer {
  readonly httpStatus: number;
  readonly body: unknown;
  /** Extra response headers (retry-after). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Close the connection after the reply (the request body was not read to its end). */
  readonly closeConnection?: boolean;
}

/** What a request brings to the serve step, copied from uWS's request (or from a forwarded envelope) beforehand. */
export interface Incoming {
  readonly contentType: string;
  /** The credentials the operation's auth level reads ([id, token]); undefined for public operations. */
  readonly presented: readonly [string, string] | undefined;
  readonly raw: Buffer;
}

/**
 * One request from its first byte to its answer: the RequestContext a handler gets and its place in the gate. One
 * object per request, with what is rarely used (the child logger, the client address) made only when asked for.
 */
export class Exchange implements RequestContext {
  aborted = false;
  /** The page's Origin header, when the operation checks it against the API key's domains; '' otherwise. */
  origin = '';
  identity: RequestContext['identity'] = null;
  /** The operation has started: a client leaving now does not finish the request, the operation's end does. */
  handling = false;
  /** The HTTP status answered (0: none, the client left first; counted as 499 like nginx). */
  httpStatus = 0;
  private readonly started = performance.now();
  /** Headers to pass on when the request is forwarded to a document's owner; undefined: it is never forwarded. */
  forwardHeaders: Record<string, string> | undefined;
  private finished = false;
  private logger: Logger | undefined;
  private address: string | undefined;

  constructor(
    private readonly deps: Pick<RouteDeps, 'log' | 'gate'>,
    readonly path: string,
    private readonly instrument: RestInstrument,
    readonly requestId: string,
    public corsOrigin: string,
    /** The client's address: given (resolved already, or forwarded), or read from the socket on first use. */
    private readonly addressOf: string | (() => string),
    /** Another node received the request and forwarded it here: it was rate limited and origin-checked there. */
    readonly forwarded: boolean,
  ) {
    if (typeof addressOf === 'string') this.address = addressOf;
  }

  get log(): Logger {
    return (this.logger ??= this.deps.log.child({ requestId: this.requestId, path: this.path }));
  }

  get ip(): string {
    this.address ??= this.aborted || typeof this.addressOf === 'string' ? '' : this.addressOf();
    return this.address;
  }

  /** Leaves the gate, once. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.deps.gate.leave();
    this.instrument.observe(this.httpStatus === 0 ? 499 : this.httpStatus, (performance.now() - this.started) / 1000);
  }
}

/**
 * The serve step: the answer to `incoming`, or undefined when the client left before it (the operation completed).
 * The same for a direct request and one another node forwarded (`exchange.forwarded`), except that a forwarded one
 * takes no rate limit (the receiving node took it, so a key's budget counts each request once) and is never
 * forwarded again (if the lease moved meanwhile, it answers UNAVAILABLE). Never throws.
 */
export async function serveStep(op: Operation, deps: RouteDeps, validate: Validator<unknown>, exchange: Exchange, incoming: Incoming): Promise<Answer | undefined> {
  // ajv is loaded at the first request (src/http/validate.ts); every later one goes on without an await here.
  const loading = validatorLoading();
  if (loading !== undefined) {
    try {
      await loading;
    } catch (error) {
      return failed(exchange, toAppError(error), false);
    }
  }
  if (exchange.aborted) {
    exchange.finish();
    return undefined;
  }
  exchange.handling = true;
  try {
    const { presented } = incoming;
    // Without a cluster, exactly the synchronous check it always was (no await between reading and handling).
    exchange.identity =
      deps.catchUp === undefined ? authenticate(op, deps.auth, presented) : await afterCatchUp(deps, ['PERMISSION_DENIED', 'UNAUTHENTICATED'], () => authenticate(op, deps.auth, presented));
    if (exchange.origin !== '' && exchange.identity?.kind === 'apiKey' && deps.originPolicy !== undefined) {
      const policy = deps.originPolicy(exchange.identity.apiKey, exchange.origin);
      if (policy === 'refused') throw permissionDenied(`origin ${exchange.origin} is not among this API key's domains (see /v2/workspace/domains/get)`);
      if (policy === 'listed') exchange.corsOrigin = exchange.origin;
    }
    if (!exchange.forwarded) takeRateLimits(op, deps, exchange, incoming.raw.length);
    if (!isJsonContentType(incoming.contentType)) throw unsupportedMediaType(incoming.contentType);
    const input = validate(parseEnvelope(incoming.raw));
    if (op.targetEmail !== undefined && !exchange.forwarded) deps.limits[op.targetEmail.limiter].take(op.targetEmail.of(input).trim().toLowerCase());
    const reply = deps.catchUp === undefined ? await op.handle(input, exchange) : await afterCatchUp(deps, ['NOT_FOUND'], () => op.handle(input, exchange));
    if (exchange.aborted) {
      exchange.log.debug('client went away before the reply; the operation completed');
      return undefined;
    }
    if (reply.kind === 'raw') return answered(exchange, { httpStatus: reply.httpStatus, body: reply.body });
    return answered(exchange, { httpStatus: 200, body: reply.kind === 'bare' ? { result: reply.result } : successEnvelope(reply.message, reply.data, reply.extra) });
  } catch (error) {
    if (error instanceof NotOwnerError && deps.forward !== undefined && exchange.forwardHeaders !== undefined) {
      return answered(exchange, await forward(deps.forward, error.owner, exchange, incoming.raw));
    }
    return failed(exchange, toAppError(error), false);
  } finally {
    exchange.finish();
  }
}

function answered(exchange: Exchange, answer: Answer): Answer | undefined {
  if (exchange.aborted) return undefined;
  exchange.httpStatus = answer.httpStatus;
  return answer;
}

/** The error's answer (its envelope, retry-after), logged as the request's outcome. */
export function failed(exchange: Exchange, error: AppError, closeConnection: boolean): Answer | undefined {
  if (error.status === 'INTERNAL') exchange.log.error('operation failed', { error: error.cause ?? error });
  else exchange.log.info('request rejected', { status: error.status, httpStatus: error.httpStatus, message: error.message });
  const answer = answered(exchange, errorAnswer(error, closeConnection));
  exchange.finish();
  return answer;
}

export function errorAnswer(error: AppError, closeConnection = false): Answer {
  const headers = error.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterSeconds))) };
  return { httpStatus: error.httpStatus, body: errorEnvelope(error), ...(headers === undefined ? {} : { headers }), ...(closeConnection ? { closeConnection } : {}) };
}

/** Runs `attempt`; when it fails with one of `codes` in cluster mode and catching up applied something new, once more. */
async function afterCatchUp<T>(deps: RouteDeps, codes: readonly string[], attempt: () => T | Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (deps.catchUp === undefined || !(error instanceof AppError) || !codes.includes(error.status)) throw error;
    if (!(await deps.catchUp())) throw error;
    return attempt();
  }
}

/**
 * The owner's answer to the same request. Operations are forwarded whole once they found the document owned
 * elsewhere; what they did before (authentication, validation, reads) has no effect to repeat.
 */
async function forward(send: NonNullable<RouteDeps['forward']>, owner: string, exchange: Exchange, raw: Buffer): Promise<Answer> {
  try {
    return await send(owner, { path: exchange.path, headers: exchange.forwardHeaders ?? {}, body: raw, ip: exchange.ip });
  } catch (error) {
    exchange.log.warn('forwarding to the document owner failed', { owner, error: String(error) });
    return errorAnswer(unavailable('the node that owns this document did not answer; retry shortly'));
  }
}

/** Public operations count per client address; authenticated ones per API key (or workspace), in requests and in body bytes. */
function takeRateLimits(op: Operation, deps: RouteDeps, exchange: Exchange, bodyBytes: number): void {
  if (op.rateLimited) deps.limits.client.take(rateLimitKey(exchange.ip));
  const identity = exchange.identity;
  if (identity === null) return;
  const key = identity.kind === 'apiKey' ? identity.apiKey : `workspace:${identity.workspaceId}`;
  deps.limits.credential.take(key);
  const wait = deps.limits.bytes.charge(key, bodyBytes);
  if (wait > 0) {
    limitRefusals.api_key_bytes++;
    throw resourceExhausted(`this API key has sent more than ${deps.limits.bytes.bytesPerSecond} bytes per second (API_KEY_BYTES_PER_SECOND, REST bodies and sync frames together); try again later`, wait);
  }
}

/** The credential headers of each auth level, in the order they are checked, and what each holds (the uWS edge reads these). */
export const CREDENTIAL_HEADERS = {
  workspace: [
    ['x-svc-workspace-id', 'workspace id'],
    ['x-svc-workspace-auth-token', 'workspace auth token'],
  ],
  apiKey: [
    ['x-svc-api-key', 'API key'],
    ['x-svc-auth-token', 'auth token'],
  ],
} as const;

type CredentialHeader = (typeof CREDENTIAL_HEADERS)[keyof typeof CREDENTIAL_HEADERS][number];

function authenticate(op: Operation, auth: RouteDeps['auth'], presented: readonly [string, string] | undefined): RequestContext['identity'] {
  if (op.auth === 'public') return null;
  const [id, token] = presented ?? ['', ''];
  const [idHeader, tokenHeader] = CREDENTIAL_HEADERS[op.auth];
  sent(id, idHeader);
  sent(token, tokenHeader);
  try {
    return op.auth === 'workspace' ? auth.workspace(id, token) : auth.apiKey(id, token);
  } catch (error) {
    // Looked at only once refused: every id, key and token Plait mints is printable ASCII (src/auth/secrets.ts), so an
    // accepted value never needs the check (two regex tests cost 60-110 ns a request).
    printable(id, idHeader);
    printable(token, tokenHeader);
    throw error;
  }
}

/**
 * What the uWS edge reads for a credential header that was sent but reads as empty (src/http/route.ts): uWS trims the
 * bytes of 0x80 and above at a value's ends as it trims whitespace, so a value of only non-ASCII characters reads as ''
 * (and was answered "header is required"). A line feed, which no header value holds, so it is never a real value.
 */
export const SENT_EMPTY = '\n';

/** uWS hands a value's bytes as latin1 characters: UTF-8 'ö' is two characters here, neither of them printable ASCII. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** The header is there, with a value; else PERMISSION_DENIED naming it. */
function sent(value: string, [header, what]: CredentialHeader): void {
  if (value === '') throw permissionDenied(`the ${header} header is required`);
  if (value === SENT_EMPTY) throw permissionDenied(`the ${header} header is not a valid ${what}: it reads as empty (so does a value of only non-ASCII characters)`);
}

/** The header's value could be a credential; else PERMISSION_DENIED naming it and saying why it cannot. */
function printable(value: string, [header, what]: CredentialHeader): void {
  if (!PRINTABLE_ASCII.test(value)) throw permissionDenied(`the ${header} header is not a valid ${what}: it holds characters other than printable ASCII`);
}
