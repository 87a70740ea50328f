// Owns the error catalog: every failure the server reports, its canonical status, HTTP status and WebSocket close code.

/** Canonical statuses (spec section 7) with their HTTP status. A socket that must end says why with a code from CLOSE below. */
export const CANONICAL = {
  INVALID_ARGUMENT: { http: 400 },
  FAILED_PRECONDITION: { http: 400 },
  UNAUTHENTICATED: { http: 401 },
  PERMISSION_DENIED: { http: 403 },
  NOT_FOUND: { http: 404 },
  ALREADY_EXISTS: { http: 409 },
  ABORTED: { http: 409 },
  RESOURCE_EXHAUSTED: { http: 429 },
  INTERNAL: { http: 500 },
  UNAVAILABLE: { http: 503 },
} as const satisfies Record<string, { http: number }>;

export type CanonicalStatus = keyof typeof CANONICAL;

export interface AppErrorOptions {
  /** HTTP status when it differs from the canonical one (413 body too large, 405 wrong method, 415 content type). */
  readonly httpStatus?: number;
  /** Seconds for the Retry-After header of RESOURCE_EXHAUSTED. */
  readonly retryAfterSeconds?: number;
  /** Per-item map or other structured detail, sent as `error.details`. */
  readonly details?: unknown;
  readonly cause?: unknown;
}

export class AppError extends Error {
  override readonly name = 'AppError';
  readonly httpStatus: number;
  readonly retryAfterSeconds: number | undefined;
  readonly details: unknown;

  constructor(readonly status: CanonicalStatus, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.httpStatus = options.httpStatus ?? CANONICAL[status].http;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.details = options.details;
  }
}

export const invalidArgument = (message: string, options?: AppErrorOptions): AppError =>
  new AppError('INVALID_ARGUMENT', message, options);
export const notFound = (message: string): AppError => new AppError('NOT_FOUND', message);
export const alreadyExists = (message: string): AppError => new AppError('ALREADY_EXISTS', message);
export const permissionDenied = (message: string): AppError => new AppError('PERMISSION_DENIED', message);
export const unauthenticated = (message: string): AppError => new AppError('UNAUTHENTICATED', message);
export const failedPrecondition = (message: string): AppError => new AppError('FAILED_PRECONDITION', message);
export const resourceExhausted = (message: string, retryAfterSeconds: number): AppError =>
  new AppError('RESOURCE_EXHAUSTED', message, { retryAfterSeconds });
export const unavailable = (message: string): AppError => new AppError('UNAVAILABLE', message);

/** HTTP-layer failures that have no canonical status of their own. */
export const bodyTooLarge = (limit: number): AppError =>
  invalidArgument(`request body exceeds the limit of ${limit} bytes`, { httpStatus: 413 });
export const methodNotAllowed = (method: string, path: string): AppError =>
  invalidArgument(`method ${method} is not allowed on ${path}; every operation is POST`, { httpStatus: 405 });
export const unsupportedMediaType = (contentType: string): AppError =>
  invalidArgument(`content-type must be application/json, got "${contentType || '(none)'}"`, { httpStatus: 415 });

/** Anything thrown that is not an AppError becomes INTERNAL without leaking its message. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  return new AppError('INTERNAL', 'internal error', { cause: error });
}

/** WebSocket close codes the sync endpoint sends (uWS itself closes with 1009); docs/protocol.md has a row for each, checked by a test. */
export const CLOSE = {
  INTERNAL: 1011,
  SERVICE_RESTART: 1012,
  MALFORMED_FRAME: 4400,
  TOKEN_EXPIRED: 4401,
  PERMISSION_REVOKED: 4403,
  DOCUMENT_DELETED: 4404,
  /** The document was re-keyed (documents/migrate); the reason names the new id. Final: reconnect under the new id. */
  DOCUMENT_MOVED: 4410,
  /** The document is at MAX_DOCUMENT_BYTES: the edit was not applied. Final: the client keeps its edits, reconnecting would send them again. */
  DOCUMENT_TOO_LARGE: 4413,
  DOCUMENT_FULL: 4429,
  /**
   * 1013 Try Again Later, not a 44xx code: y-websocket treats 4400-4499 as final and stops reconnecting, while a
   * slow or flooding client must reconnect and resync. Used for the backpressure limit and a full mailbox.
   */
  BACKPRESSURE: 1013,
} as const;
