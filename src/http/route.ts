// Owns the uWS side of a REST request: abort tracking, header copy, body cap and writing the answer; forwarded requests enter the same serve step.
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { AppError, bodyTooLarge, methodNotAllowed, toAppError, unavailable } from '../errors.js';
import { RestInstrument } from '../metrics/instruments.js';
import { readBody } from './body.js';
import type { Operation } from './operation.js';
import { normalizeAddress } from './client-address.js';
import { errorEnvelope, writeError, writeJson, type ResponseState } from '../edge/reply.js';
import { compileValidator, type Validator } from './validate.js';
import { CREDENTIAL_HEADERS, errorAnswer, Exchange, failed, SENT_EMPTY, serveStep, type Answer, type ForwardedRequest, type Incoming, type RouteDeps } from './serve.js';

export type { Answer, Authenticator, ForwardedRequest, RouteDeps } from './serve.js';

/** UUID-shaped ids: a random per-process prefix and a counter (a random UUID per request costs more than the rest of the id work). */
const ID_PREFIX = randomUUID().slice(0, 24);
let lastRequestId = 0;

export function nextRequestId(): string {
  lastRequestId++;
  return ID_PREFIX + lastRequestId.toString(16).padStart(12, '0');
}

const CALLER_ID = /^[\w.:-]{1,128}$/;

/** One operation at one path: the uWS handler, and the entry for the same request forwarded by another node. */
export interface PathHandlers {
  readonly http: (res: HttpResponse, req: HttpRequest) => void;
  readonly forwarded: (request: ForwardedRequest) => Promise<Answer>;
}

/** Builds the handlers of one operation, one pair per path; its schema is compiled once, at the first request. */
export function route(op: Operation, deps: RouteDeps): (path: string) => PathHandlers {
  const validate: Validator<unknown> = compileValidator(op.schema);
  return (path) => {
    const instrument = new RestInstrument(path);
    return { http: httpHandler(op, deps, validate, path, instrument), forwarded: (request) => serveForwarded(op, deps, validate, path, instrument, request) };
  };
}

function httpHandler(op: Operation, deps: RouteDeps, validate: Validator<unknown>, path: string, instrument: RestInstrument): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    if (!deps.gate.enter()) {
      instrument.observe(503, 0);
      const state: ResponseState = { aborted: false, requestId: nextRequestId(), corsOrigin: deps.corsOrigin };
      deps.log.info('request rejected', { status: 'UNAVAILABLE', httpStatus: 503, message: 'the server is shutting down', path });
      writeError(res, state, unavailable('the server is shutting down; retry shortly'), true);
      return;
    }
    // Everything needed from `req` is copied now: uWS invalidates it when this function returns.
    const requestId = callerRequestId(req.getHeader('x-request-id'));
    // The socket's address is read on first use, before the reply (afterwards `res` is gone).
    const ip = op.rateLimited
      ? deps.clientAddresses.resolve(Buffer.from(res.getRemoteAddressAsText()).toString(), req.getHeader('x-forwarded-for'))
      : () => normalizeAddress(Buffer.from(res.getRemoteAddressAsText()).toString());
    const exchange = new Exchange(deps, path, instrument, requestId, deps.corsOrigin, ip, false);
    res.onAborted(() => {
      exchange.aborted = true;
      if (!exchange.handling) exchange.finish();
    });
    const write = (answer: Answer | undefined): void => {
      if (answer !== undefined) writeJson(res, exchange, answer.httpStatus, answer.body, answer);
    };
    const length = req.getHeader('content-length');
    if (length !== '' && Number(length) > deps.maxBodyBytes) {
      exchange.log.info('request rejected', { status: 'INVALID_ARGUMENT', httpStatus: 413, message: `content-length ${length} exceeds ${deps.maxBodyBytes}` });
      write(failed(exchange, bodyTooLarge(deps.maxBodyBytes), true));
      return;
    }
    const contentType = req.getHeader('content-type');
    const presented = credentials(op, (name) => credentialHeader(req, name));
    if (op.auth === 'apiKey' && deps.originPolicy !== undefined) exchange.origin = pageOrigin(req);
    if (deps.forward !== undefined) exchange.forwardHeaders = forwardHeaders(op, req, contentType, requestId);
    readBody(res, deps.maxBodyBytes).then(
      (raw) => serveStep(op, deps, validate, exchange, { contentType, presented, raw }).then(write),
      (error: unknown) => write(failed(exchange, toAppError(error), true)),
    );
  };
}

/**
 * A request another node received and forwarded here, the document's owner: the same serve step as a direct request
 * (authentication, validation, the operation), run in this process with no HTTP in between. It enters the gate like
 * a request on the listener, so a drain waits for it. It was rate limited and origin-checked on the receiving node,
 * and is never forwarded again: if this node no longer owns the document, the answer is UNAVAILABLE.
 */
async function serveForwarded(op: Operation, deps: RouteDeps, validate: Validator<unknown>, path: string, instrument: RestInstrument, request: ForwardedRequest): Promise<Answer> {
  if (!deps.gate.enter()) {
    instrument.observe(503, 0);
    return errorAnswer(unavailable('the server is shutting down; retry shortly'));
  }
  const header = (name: string): string => request.headers[name] ?? '';
  const exchange = new Exchange(deps, path, instrument, callerRequestId(header('x-request-id')), deps.corsOrigin, request.ip, true);
  if (request.body.length > deps.maxBodyBytes) return failed(exchange, bodyTooLarge(deps.maxBodyBytes), false) ?? errorAnswer(bodyTooLarge(deps.maxBodyBytes));
  const incoming: Incoming = { contentType: header('content-type'), presented: credentials(op, header), raw: Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength) };
  // Undefined only for a client that left, which a forwarded request has no way to do.
  return (await serveStep(op, deps, validate, exchange, incoming)) ?? errorAnswer(unavailable('the request was abandoned'));
}

/** The caller's X-Request-Id when it is a plausible id, else a new one. */
function callerRequestId(incoming: string): string {
  return incoming !== '' && CALLER_ID.test(incoming) ? incoming : nextRequestId();
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

/** The credentials the operation's auth level reads (other headers are not copied); `header` answers '' when absent. */
function credentials(op: Operation, header: (name: string) => string): readonly [string, string] | undefined {
  if (op.auth === 'public') return undefined;
  const [[id], [token]] = CREDENTIAL_HEADERS[op.auth];
  return [header(id), header(token)];
}

/** A credential header's value, or SENT_EMPTY when it was sent but reads as '' (uWS lists it; only then is it looked for). */
function credentialHeader(req: HttpRequest, name: string): string {
  const value = req.getHeader(name);
  if (value !== '') return value;
  let sent = false;
  req.forEach((key) => (sent ||= key === name));
  return sent ? SENT_EMPTY : '';
}

/**
 * The headers an owner needs to answer a forwarded request as this node would have. Not Origin: this node checks
 * the page's origin and writes the CORS headers of the reply itself.
 */
function forwardHeaders(op: Operation, req: HttpRequest, contentType: string, requestId: string): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentType, 'x-request-id': requestId };
  for (const [name] of op.auth === 'public' ? [] : CREDENTIAL_HEADERS[op.auth]) {
    const value = req.getHeader(name);
    if (value !== '') headers[name] = value;
  }
  return headers;
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
