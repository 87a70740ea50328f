// Owns the client's public shapes: credentials, the success result, the typed error carrying its canonical status.

/** The canonical statuses of the error envelope (docs/errors.md). */
export type CanonicalStatus =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'INTERNAL'
  | 'UNAVAILABLE';

export type AuthLevel = 'public' | 'workspace' | 'apiKey';

/** What the generated operations call (src/client/generated/*): PlaitClient's transport. */
export interface OperationCaller {
  call<T>(path: string, auth: AuthLevel, data: unknown): Promise<OperationResult<T>>;
}

/** `result` of a success envelope: `data` plus any siblings the operation adds (`pageToken`, `nextPageToken`). */
export interface OperationResult<T = unknown> {
  readonly status: 'success';
  readonly message: string;
  readonly data: T;
  readonly [extra: string]: unknown;
}

/** The error envelope as a thrown error: `status` is the canonical status, `httpStatus` what the server answered. */
export class PlaitError extends Error {
  override readonly name = 'PlaitError';

  constructor(
    readonly status: CanonicalStatus,
    message: string,
    readonly httpStatus: number,
    readonly details: unknown,
    /** The server's x-request-id, to find the request in its logs. */
    readonly requestId: string | null,
    /** Seconds from Retry-After (429), when the server sent one. */
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(message);
  }
}
