// Owns the per-request wrapper: abort tracking, header copy, body cap, auth, envelope, validation, reply and error mapping.
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { AppError, bodyTooLarge, methodNotAllowed, permissionDenied, toAppError, unavailable, unsupportedMediaType } from '../errors.js';
import type { Logger } from '../log.js';
import { RestInstrument } from '../metrics/instruments.js';
import type { ApiKeyIdentity, WorkspaceIdentity } from '../tenant/workspaces.js';
import { isJsonContentType, parseEnvelope, readBody } from './body.js';
import type { RequestGate } from './gate.js';
import type { Operation, RequestContext } from './operation.js';
import { normalizeAddress, rateLimitKey, type ClientAddresses } from './client-address.js';
import type { RateLimits } from './rate-limit.js';
import { errorEnvelope, successEnvelope, writeError, writeJson, type ResponseState } from '../edge/reply.js';
import { compileValidator, type Validator } from './validate.js';
import { NotOwnerError } from '../doc/ownership.js';

/** Marks a request one node forwarded to a document's owner: the owner answers it and never forwards it again. */
export const FORWARDED_HEADER = 'x-plait-forwarded';

/** A REST request as forwarded to a document's owner in a cluster (src/cluster/ implements the transport). */
export interface ForwardedRequest {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
}

export interface ForwardedReply {
  readonly status: number;
  readonly body: unknown;
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
  readonly forward?: (owner: string, request: ForwardedRequest) => Promise<ForwardedReply>;
  /**
   * Cluster mode: catches up with the cluster's state log; true once done. A lookup that missed
   * (credentials, a record NOT_FOUND) is retried once after it, so what another node just wrote is found here at once.
   */
  readonly catchUp?: () => Promise<boolean>;
}

/** UUID-shaped ids: a random per-process prefix and a counter (a random UUID per request costs more than the rest of the id work). */
const ID_PREFIX = randomUUID().slice(0, 24);
let lastRequestId = 0;

export function nextRequestId(): string {
  lastRequestId++;
  return ID_PREFIX + lastRequestId.toString(16).padStart(12, '0');
}

const CALLER_ID = /^[\w.:-]{1,128}$/;

/**
 * One request from its first byte to its reply: the ResponseState of src/edge/reply.ts, the RequestContext a handler gets, and
 * its place in the gate. One object per request, with what is rarely used (the child logger, the client address)
 * made only when asked for.
 */
class Exchange implements ResponseState, RequestContext {
  aborted = false;
  /** The page's Origin header, when the operation checks it against the API key's domains; '' otherwise. */
  origin = '';
  identity: RequestContext['identity'] = null;
  /** The operation has started: a client leaving now does not finish the request, the operation's end does. */
  handling = false;
  /** The HTTP status answered (0: none, the client left first; counted as 499 like nginx). */
  httpStatus = 0;
  private readonly started = performance.now();
  /** Headers to pass on when the request is forwarded to a document's owner; undefined: it came forwarded. */
  forwardHeaders: Record<string, string> | undefined;
  private finished = false;
  private logger: Logger | undefined;

  constructor(
    readonly res: HttpResponse,
    private readonly deps: RouteDeps,
    readonly path: string,
    private readonly instrument: RestInstrument,
    readonly requestId: string,
    public corsOrigin: string,
    private address: string | undefined,
  ) {}

  get log(): Logger {
    return (this.logger ??= this.deps.log.child({ requestId: this.requestId, path: this.path }));
  }

  /** The client's address; read from the socket on first use (before the reply: afterwards `res` is gone). */
  get ip(): string {
    this.address ??= this.aborted ? '' : normalizeAddress(Buffer.from(this.res.getRemoteAddressAsText()).toString());
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

/** Builds the uWS handlers of one operation, one per path; its schema is compiled once, at the first request. */
export function route(op: Operation, deps: RouteDeps): (path: string) => (res: HttpResponse, req: HttpRequest) => void {
  const validate: Validator<unknown> = compileValidator(op.schema);
  return (path) => {
    const instrument = new RestInstrument(path);
    return (res, req) => {
      if (!deps.gate.enter()) {
        instrument.observe(503, 0);
        const state: ResponseState = { aborted: false, requestId: nextRequestId(), corsOrigin: deps.corsOrigin };
        deps.log.info('request rejected', { status: 'UNAVAILABLE', httpStatus: 503, message: 'the server is shutting down', path });
        writeError(res, state, unavailable('the server is shutting down; retry shortly'), true);
        return;
      }
      // Everything needed from `req` is copied now: uWS invalidates it when this function returns.
      const incomingId = req.getHeader('x-request-id');
      const requestId = incomingId !== '' && CALLER_ID.test(incomingId) ? incomingId : nextRequestId();
      const ip = op.rateLimited
        ? deps.clientAddresses.resolve(Buffer.from(res.getRemoteAddressAsText()).toString(), req.getHeader('x-forwarded-for'))
        : undefined;
      const exchange = new Exchange(res, deps, path, instrument, requestId, deps.corsOrigin, ip);
      res.onAborted(() => {
        exchange.aborted = true;
        if (!exchange.handling) exchange.finish();
      });
      const length = req.getHeader('content-length');
      if (length !== '' && Number(length) > deps.maxBodyBytes) {
        exchange.httpStatus = 413;
        exchange.log.info('request rejected', { status: 'INVALID_ARGUMENT', httpStatus: 413, message: `content-length ${length} exceeds ${deps.maxBodyBytes}` });
        writeError(res, exchange, bodyTooLarge(deps.maxBodyBytes), true);
        exchange.finish();
        return;
      }
      const contentType = req.getHeader('content-type');
      const presented = credentials(op, req);
      if (op.auth === 'apiKey' && deps.originPolicy !== undefined) exchange.origin = pageOrigin(req);
      if (deps.forward !== undefined && req.getHeader(FORWARDED_HEADER) === '') exchange.forwardHeaders = forwardHeaders(op, req, contentType, requestId);
      readBody(res, deps.maxBodyBytes).then(
        (raw) => serve(op, deps, validate, exchange, contentType, presented, raw),
        (error: unknown) => fail(exchange, toAppError(error), true),
      );
    };
  };
}

/**
 * The Origin of a cross-origin page, or '' for a request that is not from another origin's page (no Origin header,
 * or the server's own pages, whose Origin names the Host they were served from).
 */
export function pageOrigin(req: HttpRequest): string {
  const origin = req.getHeader('origin');
  if (origin === '' || origin === 'null') return origin === 'null' ? origin : '';
  const host = req.getHeader('host');
  return host !== '' && (origin === `http://${host}` || origin === `https://${host}`) ? '' : origin;
}

/** The credentials the operation's auth level reads (other headers are not copied). */
function credentials(op: Operation, req: HttpRequest): readonly [string, string] | undefined {
  switch (op.auth) {
    case 'public':
      return undefined;
    case 'workspace':
      return [req.getHeader('x-svc-workspace-id'), req.getHeader('x-svc-workspace-auth-token')];
    case 'apiKey':
      return [req.getHeader('x-svc-api-key'), req.getHeader('x-svc-auth-token')];
  }
}

async function serve(
  op: Operation,
  deps: RouteDeps,
  validate: Validator<unknown>,
  exchange: Exchange,
  contentType: string,
  presented: readonly [string, string] | undefined,
  raw: Buffer,
): Promise<void> {
  if (exchange.aborted) return exchange.finish();
  exchange.handling = true;
  try {
    // Without a cluster, exactly the synchronous check it always was (no await between reading and handling).
    exchange.identity =
      deps.catchUp === undefined ? authenticate(op, deps.auth, presented) : await afterCatchUp(deps, ['PERMISSION_DENIED', 'UNAUTHENTICATED'], () => authenticate(op, deps.auth, presented));
    if (exchange.origin !== '' && exchange.identity?.kind === 'apiKey' && deps.originPolicy !== undefined) {
      const policy = deps.originPolicy(exchange.identity.apiKey, exchange.origin);
      if (policy === 'refused') throw permissionDenied(`origin ${exchange.origin} is not among this API key's domains (see /v2/workspace/domains/get)`);
      if (policy === 'listed') exchange.corsOrigin = exchange.origin;
    }
    takeRateLimits(op, deps.limits, exchange);
    if (!isJsonContentType(contentType)) throw unsupportedMediaType(contentType);
    const input = validate(parseEnvelope(raw));
    if (op.targetEmail !== undefined) deps.limits[op.targetEmail.limiter].take(op.targetEmail.of(input).trim().toLowerCase());
    const reply = deps.catchUp === undefined ? await op.handle(input, exchange) : await afterCatchUp(deps, ['NOT_FOUND'], () => op.handle(input, exchange));
    if (exchange.aborted) {
      exchange.log.debug('client went away before the reply; the operation completed');
      return;
    }
    if (reply.kind === 'raw') {
      exchange.httpStatus = reply.httpStatus;
      writeJson(exchange.res, exchange, reply.httpStatus, reply.body);
    } else {
      exchange.httpStatus = 200;
      writeJson(exchange.res, exchange, 200, reply.kind === 'bare' ? { result: reply.result } : successEnvelope(reply.message, reply.data, reply.extra));
    }
  } catch (error) {
    if (error instanceof NotOwnerError && deps.forward !== undefined && exchange.forwardHeaders !== undefined) {
      await forward(deps.forward, error.owner, exchange, raw);
      return;
    }
    fail(exchange, toAppError(error), false);
  } finally {
    exchange.finish();
  }
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
 * Answers with the owner's reply to the same request. Operations are forwarded whole once they found the document
 * owned elsewhere; what they did before (authentication, validation, reads) has no effect to repeat.
 */
async function forward(send: NonNullable<RouteDeps['forward']>, owner: string, exchange: Exchange, raw: Buffer): Promise<void> {
  try {
    const reply = await send(owner, { path: exchange.path, headers: exchange.forwardHeaders ?? {}, body: raw });
    writeJson(exchange.res, exchange, reply.status, reply.body);
  } catch (error) {
    exchange.log.warn('forwarding to the document owner failed', { owner, error: String(error) });
    fail(exchange, unavailable('the node that owns this document did not answer; retry shortly'), false);
  }
}

/**
 * The headers an owner needs to answer a forwarded request as this node would have. Not Origin: this node checked
 * the page's origin already and writes the CORS headers of the reply itself.
 */
function forwardHeaders(op: Operation, req: HttpRequest, contentType: string, requestId: string): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentType, 'x-request-id': requestId };
  const names = op.auth === 'workspace' ? ['x-svc-workspace-id', 'x-svc-workspace-auth-token'] : op.auth === 'apiKey' ? ['x-svc-api-key', 'x-svc-auth-token'] : [];
  for (const name of names) {
    const value = req.getHeader(name);
    if (value !== '') headers[name] = value;
  }
  return headers;
}

/** Public operations count per client address; authenticated ones per API key (or workspace). */
function takeRateLimits(op: Operation, limits: RateLimits, exchange: Exchange): void {
  if (op.rateLimited) limits.client.take(rateLimitKey(exchange.ip));
  const identity = exchange.identity;
  if (identity === null) return;
  limits.credential.take(identity.kind === 'apiKey' ? identity.apiKey : `workspace:${identity.workspaceId}`);
}

function fail(exchange: Exchange, error: AppError, closeConnection: boolean): void {
  if (!exchange.aborted) exchange.httpStatus = error.httpStatus;
  if (error.status === 'INTERNAL') exchange.log.error('operation failed', { error: error.cause ?? error });
  else exchange.log.info('request rejected', { status: error.status, httpStatus: error.httpStatus, message: error.message });
  writeError(exchange.res, exchange, error, closeConnection);
  exchange.finish();
}

function authenticate(op: Operation, auth: Authenticator, presented: readonly [string, string] | undefined): RequestContext['identity'] {
  const [id, token] = presented ?? ['', ''];
  switch (op.auth) {
    case 'public':
      return null;
    case 'workspace':
      if (id === '') throw permissionDenied('the x-svc-workspace-id header is required');
      if (token === '') throw permissionDenied('the x-svc-workspace-auth-token header is required');
      return auth.workspace(id, token);
    case 'apiKey':
      if (id === '') throw permissionDenied('the x-svc-api-key header is required');
      if (token === '') throw permissionDenied('the x-svc-auth-token header is required');
      return auth.apiKey(id, token);
  }
}

/** For paths no operation serves: 405 on a known path with another method, 404 otherwise. */
export function fallback(
  knownPaths: ReadonlySet<string>,
  deps: Pick<RouteDeps, 'corsOrigin' | 'log'>,
): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const path = req.getUrl();
    const method = req.getMethod().toUpperCase();
    const state: ResponseState = { aborted: false, requestId: nextRequestId(), corsOrigin: deps.corsOrigin };
    res.onAborted(() => {
      state.aborted = true;
    });
    const error = knownPaths.has(path)
      ? methodNotAllowed(method, path)
      : new AppError('NOT_FOUND', `no operation at ${method} ${path}`);
    deps.log.info('request rejected', { status: error.status, httpStatus: error.httpStatus, message: error.message, requestId: state.requestId });
    writeJson(res, state, error.httpStatus, errorEnvelope(error), {
      closeConnection: method !== 'GET' && method !== 'HEAD',
      headers: error.httpStatus === 405 ? { allow: 'POST, OPTIONS' } : {},
    });
  };
}

/** CORS preflight: the origins allowed by config may POST JSON with the x-svc-* headers. */
export function preflight(deps: Pick<RouteDeps, 'corsOrigin'>): (res: HttpResponse, req: HttpRequest) => void {
  return (res) => {
    res.cork(() => {
      res
        .writeStatus('204 No Content')
        .writeHeader('access-control-allow-origin', deps.corsOrigin)
        .writeHeader('access-control-allow-methods', 'POST, GET, OPTIONS')
        .writeHeader(
          'access-control-allow-headers',
          'content-type, x-request-id, x-svc-api-key, x-svc-auth-token, x-svc-workspace-id, x-svc-workspace-auth-token',
        )
        .writeHeader('access-control-max-age', '86400')
        .endWithoutBody();
    });
  };
}
