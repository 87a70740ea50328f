// Owns the per-request wrapper: abort tracking, header copy, body cap, auth, envelope, validation, reply and error mapping.
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { AppError, permissionDenied, toAppError, unsupportedMediaType } from '../errors.js';
import type { Logger } from '../log.js';
import type { ApiKeyIdentity, WorkspaceIdentity } from '../tenant/workspaces.js';
import { isJsonContentType, parseEnvelope, readBody } from './body.js';
import type { Operation, RequestContext } from './operation.js';
import type { RateLimiter } from './rate-limit.js';
import { errorEnvelope, successEnvelope, writeError, writeJson, type ResponseState } from './reply.js';
import { compileValidator, type Validator } from './validate.js';

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
  readonly publicLimiter: RateLimiter;
}

/** Headers copied from `req` before the first await (uWS invalidates `req` when the handler returns). */
interface CopiedRequest {
  readonly path: string;
  readonly contentType: string;
  readonly contentLength: number | undefined;
  readonly apiKey: string;
  readonly authToken: string;
  readonly workspaceId: string;
  readonly workspaceToken: string;
  readonly requestId: string;
  readonly ip: string;
}

function copyRequest(res: HttpResponse, req: HttpRequest): CopiedRequest {
  const length = req.getHeader('content-length');
  const incomingId = req.getHeader('x-request-id');
  return {
    path: req.getUrl(),
    contentType: req.getHeader('content-type'),
    contentLength: length === '' ? undefined : Number(length),
    apiKey: req.getHeader('x-svc-api-key'),
    authToken: req.getHeader('x-svc-auth-token'),
    workspaceId: req.getHeader('x-svc-workspace-id'),
    workspaceToken: req.getHeader('x-svc-workspace-auth-token'),
    requestId: /^[\w.:-]{1,128}$/.test(incomingId) ? incomingId : randomUUID(),
    ip: Buffer.from(res.getRemoteAddressAsText()).toString(),
  };
}

/** Builds the uWS handler for one operation; its schema is compiled here, once. */
export function route(op: Operation, deps: RouteDeps): (res: HttpResponse, req: HttpRequest) => void {
  const validate: Validator<unknown> = compileValidator(op.schema);
  return (res, req) => {
    const request = copyRequest(res, req);
    const state: ResponseState = { aborted: false, requestId: request.requestId, corsOrigin: deps.corsOrigin };
    res.onAborted(() => {
      state.aborted = true;
    });
    const log = deps.log.child({ requestId: request.requestId, path: request.path });
    if (request.contentLength !== undefined && request.contentLength > deps.maxBodyBytes) {
      writeError(res, state, new AppError('INVALID_ARGUMENT', `request body exceeds the limit of ${deps.maxBodyBytes} bytes`, { httpStatus: 413 }), true);
      return;
    }
    readBody(res, deps.maxBodyBytes).then(
      (raw) => serve(op, deps, validate, request, state, res, log, raw),
      (error: unknown) => finish(res, state, log, toAppError(error), true),
    );
  };
}

async function serve(
  op: Operation,
  deps: RouteDeps,
  validate: Validator<unknown>,
  request: CopiedRequest,
  state: ResponseState,
  res: HttpResponse,
  log: Logger,
  raw: Buffer,
): Promise<void> {
  if (state.aborted) return;
  try {
    const identity = authenticate(op, deps.auth, request);
    if (op.rateLimited) deps.publicLimiter.take(request.ip);
    if (!isJsonContentType(request.contentType)) throw unsupportedMediaType(request.contentType);
    const input = validate(parseEnvelope(raw));
    const ctx: RequestContext = { requestId: request.requestId, ip: request.ip, log, identity };
    const reply = await op.handle(input, ctx);
    if (state.aborted) {
      log.debug('client went away before the reply; the operation completed');
      return;
    }
    const body = reply.kind === 'bare' ? { result: reply.result } : successEnvelope(reply.message, reply.data, reply.extra);
    writeJson(res, state, 200, body);
  } catch (error) {
    finish(res, state, log, toAppError(error), false);
  }
}

function finish(res: HttpResponse, state: ResponseState, log: Logger, error: AppError, closeConnection: boolean): void {
  if (error.status === 'INTERNAL') log.error('operation failed', { error: error.cause ?? error });
  else log.debug('request rejected', { status: error.status, message: error.message });
  writeError(res, state, error, closeConnection);
}

function authenticate(op: Operation, auth: Authenticator, request: CopiedRequest): RequestContext['identity'] {
  switch (op.auth) {
    case 'public':
      return null;
    case 'workspace':
      if (request.workspaceId === '') throw permissionDenied('the x-svc-workspace-id header is required');
      if (request.workspaceToken === '') throw permissionDenied('the x-svc-workspace-auth-token header is required');
      return auth.workspace(request.workspaceId, request.workspaceToken);
    case 'apiKey':
      if (request.apiKey === '') throw permissionDenied('the x-svc-api-key header is required');
      if (request.authToken === '') throw permissionDenied('the x-svc-auth-token header is required');
      return auth.apiKey(request.apiKey, request.authToken);
  }
}

/** For paths no operation serves: 405 on a known path with another method, 404 otherwise. */
export function fallback(
  knownPaths: ReadonlySet<string>,
  deps: Pick<RouteDeps, 'corsOrigin'>,
): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const path = req.getUrl();
    const method = req.getMethod().toUpperCase();
    const state: ResponseState = { aborted: false, requestId: randomUUID(), corsOrigin: deps.corsOrigin };
    res.onAborted(() => {
      state.aborted = true;
    });
    const error = knownPaths.has(path)
      ? new AppError('INVALID_ARGUMENT', `method ${method} is not allowed on ${path}; every operation is POST`, { httpStatus: 405 })
      : new AppError('NOT_FOUND', `no operation at ${method} ${path}`);
    writeJson(res, state, error.httpStatus, errorEnvelope(error), {
      closeConnection: method !== 'GET' && method !== 'HEAD',
      headers: error.httpStatus === 405 ? { allow: 'POST, OPTIONS' } : {},
    });
  };
}

/** CORS preflight: any origin allowed by config may POST JSON with the x-svc-* headers. */
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
