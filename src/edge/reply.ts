// Owns writing HTTP responses from uWebSockets.js (status line, common headers, envelopes), shared by src/http and the src/ws upgrade.
import type { HttpResponse } from 'uWebSockets.js';
import type { AppError } from '../errors.js';

const STATUS_LINES: Record<number, string> = {
  200: '200 OK',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export interface ResponseState {
  aborted: boolean;
  readonly requestId: string;
  readonly corsOrigin: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const EXPOSED = 'x-request-id, retry-after';
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** Writes a JSON response inside one cork; a no-op once the client has gone. */
export function writeJson(
  res: HttpResponse,
  state: ResponseState,
  httpStatus: number,
  body: unknown,
  options: { closeConnection?: boolean; headers?: Readonly<Record<string, string>> } = {},
): void {
  if (state.aborted) return;
  const payload = JSON.stringify(body);
  const status = STATUS_LINES[httpStatus] ?? `${httpStatus} Unknown`;
  const headers = options.headers ?? NO_HEADERS;
  res.cork(() => {
    res.writeStatus(status);
    res.writeHeader('content-type', JSON_TYPE);
    res.writeHeader('x-request-id', state.requestId);
    res.writeHeader('access-control-allow-origin', state.corsOrigin);
    res.writeHeader('access-control-expose-headers', EXPOSED);
    if (state.corsOrigin !== '*') res.writeHeader('vary', 'origin');
    for (const name in headers) res.writeHeader(name, headers[name] as string);
    res.end(payload, options.closeConnection ?? false);
  });
  state.aborted = true;
}

export function successEnvelope(message: string, data: unknown, extra?: Readonly<Record<string, unknown>>): unknown {
  return { result: { status: 'success', message, data: data ?? null, ...extra } };
}

export function errorEnvelope(error: AppError): unknown {
  const body: Record<string, unknown> = { status: error.status, message: error.message };
  if (error.details !== undefined) body['details'] = error.details;
  return { error: body };
}

export function writeError(res: HttpResponse, state: ResponseState, error: AppError, closeConnection = false): void {
  const headers = error.retryAfterSeconds === undefined ? NO_HEADERS : { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterSeconds))) };
  writeJson(res, state, error.httpStatus, errorEnvelope(error), { closeConnection, headers });
}
