// Owns the typed REST client (`plait/client`): transport, credentials per auth level, the error envelope as PlaitError.
import { GeneratedOperations } from './operations.generated.js';
import { PlaitError, type AuthLevel, type CanonicalStatus, type OperationResult } from './types.js';

export * from './operations.generated.js';
export { PlaitError, type AuthLevel, type CanonicalStatus, type OperationResult } from './types.js';

export interface PlaitClientOptions {
  /** e.g. `http://127.0.0.1:8080` */
  readonly baseUrl: string;
  /** For API-key operations. */
  readonly apiKey?: string;
  readonly authToken?: string;
  /** For workspace operations. */
  readonly workspaceId?: string;
  readonly workspaceAuthToken?: string;
  /** Another fetch (tests, proxies); the global one by default. */
  readonly fetch?: typeof globalThis.fetch;
  /** Extra headers on every request (x-request-id, tracing). */
  readonly headers?: Readonly<Record<string, string>>;
}

const STATUSES: ReadonlySet<string> = new Set<CanonicalStatus>([
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'ABORTED',
  'RESOURCE_EXHAUSTED',
  'INTERNAL',
  'UNAVAILABLE',
]);

interface Envelope {
  result?: unknown;
  error?: { status?: unknown; message?: unknown; details?: unknown };
}

/**
 * A client for one server and one set of credentials. Each method POSTs `{data}` to its operation, resolves with the
 * envelope's `result`, and rejects with a PlaitError carrying the canonical status of the error envelope.
 */
export class PlaitClient extends GeneratedOperations {
  private readonly fetch: typeof globalThis.fetch;

  constructor(readonly options: PlaitClientOptions) {
    super();
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** The same server with other credentials (keeps baseUrl, fetch and headers). */
  with(credentials: Pick<PlaitClientOptions, 'apiKey' | 'authToken' | 'workspaceId' | 'workspaceAuthToken'>): PlaitClient {
    return new PlaitClient({ ...this.options, ...credentials });
  }

  private credentials(auth: AuthLevel): Record<string, string> {
    const o = this.options;
    switch (auth) {
      case 'public':
        return {};
      case 'apiKey':
        return { ...(o.apiKey === undefined ? {} : { 'x-svc-api-key': o.apiKey }), ...(o.authToken === undefined ? {} : { 'x-svc-auth-token': o.authToken }) };
      case 'workspace':
        return {
          ...(o.workspaceId === undefined ? {} : { 'x-svc-workspace-id': o.workspaceId }),
          ...(o.workspaceAuthToken === undefined ? {} : { 'x-svc-workspace-auth-token': o.workspaceAuthToken }),
        };
    }
  }

  protected async call<T>(path: string, auth: AuthLevel, data: unknown): Promise<OperationResult<T>> {
    const response = await this.fetch(new URL(path, this.options.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...this.options.headers, ...this.credentials(auth) },
      body: JSON.stringify({ data }),
    });
    const text = await response.text();
    let body: Envelope;
    try {
      body = JSON.parse(text) as Envelope;
    } catch {
      throw new PlaitError(statusForHttp(response.status), `the server answered ${response.status} with a body that is not JSON`, response.status, text, response.headers.get('x-request-id'), undefined);
    }
    if (response.ok && body.result !== undefined) return body.result as OperationResult<T>;
    const error = body.error ?? {};
    const status = typeof error.status === 'string' && STATUSES.has(error.status) ? (error.status as CanonicalStatus) : statusForHttp(response.status);
    const retryAfter = response.headers.get('retry-after');
    throw new PlaitError(
      status,
      typeof error.message === 'string' ? error.message : `the server answered ${response.status}`,
      response.status,
      error.details,
      response.headers.get('x-request-id'),
      retryAfter === null ? undefined : Number(retryAfter),
    );
  }
}

/** The canonical status an HTTP status stands for, when the body carries none (a proxy's error page). */
function statusForHttp(httpStatus: number): CanonicalStatus {
  if (httpStatus === 401) return 'UNAUTHENTICATED';
  if (httpStatus === 403) return 'PERMISSION_DENIED';
  if (httpStatus === 404) return 'NOT_FOUND';
  if (httpStatus === 409) return 'ABORTED';
  if (httpStatus === 429) return 'RESOURCE_EXHAUSTED';
  if (httpStatus === 503) return 'UNAVAILABLE';
  if (httpStatus >= 400 && httpStatus < 500) return 'INVALID_ARGUMENT';
  return 'INTERNAL';
}
