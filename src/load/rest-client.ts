// Owns the load generator's REST calls: the POST/`data` envelope with API-key headers, set-up and clean-up of what a run creates, and the operations of the REST mix.
import type { RestOperation } from './scenario.js';

export interface RestAuth {
  /** The deployment's http(s) base URL. */
  readonly url: string;
  readonly apiKey: string;
  readonly authToken: string;
}

export interface RestOutcome {
  readonly ok: boolean;
  /** HTTP status, or 0 when no answer came (connection refused, reset, timeout). */
  readonly status: number;
  /** `error.status` of the envelope, or the network error's name, when not ok. */
  readonly error?: string;
  readonly message?: string;
  readonly data?: unknown;
}

const TIMEOUT_MS = 30_000;

/** Why a fetch got no answer: the socket error's code (ECONNREFUSED…), else the most specific message. */
export function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** POSTs `{data}` to `path`; never throws (a network failure is an outcome with status 0). */
export async function restCall(auth: RestAuth, path: string, data: unknown, timeoutMs = TIMEOUT_MS): Promise<RestOutcome> {
  let response: Response;
  try {
    response = await fetch(`${auth.url.replace(/\/+$/, '')}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-api-key': auth.apiKey, 'x-svc-auth-token': auth.authToken },
      body: JSON.stringify({ data }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    return { ok: false, status: 0, error: networkReason(error), message: (error as Error).message };
  }
  let body: { result?: { data?: unknown }; error?: { status?: string; message?: string } } = {};
  try {
    const text = await response.text();
    if (text !== '') body = JSON.parse(text) as typeof body;
  } catch (error) {
    return { ok: false, status: response.status, error: 'BAD_BODY', message: (error as Error).message };
  }
  if (response.ok && body.result !== undefined) {
    const failed = failedItem(body.result.data);
    if (failed !== undefined) return { ok: false, status: response.status, error: 'ITEM_FAILED', message: failed };
    return { ok: true, status: response.status, data: body.result.data };
  }
  return { ok: false, status: response.status, error: body.error?.status ?? `HTTP_${response.status}`, message: body.error?.message ?? '' };
}

/** A bulk answer (map of id to `{success, message}`) with a failed item: that item's message. */
function failedItem(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  for (const [id, item] of Object.entries(data)) {
    if (typeof item === 'object' && item !== null && (item as { success?: unknown }).success === false) {
      return `${id}: ${String((item as { message?: unknown }).message ?? 'failed')}`;
    }
  }
  return undefined;
}

async function required(auth: RestAuth, path: string, data: unknown): Promise<unknown> {
  const outcome = await restCall(auth, path, data);
  if (!outcome.ok) throw new Error(`${path} failed: ${outcome.status} ${outcome.error ?? ''} ${outcome.message ?? ''}`.trim());
  return outcome.data;
}

/** Creates the run's organization (its documents, comments and presence live in it and go with it at clean-up). */
export async function createOrganization(auth: RestAuth, organizationId: string, name: string): Promise<void> {
  await required(auth, '/v2/organizations/add', { organizations: [{ organizationId, organizationName: name }] });
}

export async function deleteOrganization(auth: RestAuth, organizationId: string): Promise<void> {
  await required(auth, '/v2/organizations/delete', { organizationIds: [organizationId] });
}

/** Adds the run's users to its organization (`/v2/users/add`, 500 per call): they show up like real users and go with it. */
export async function addUsers(auth: RestAuth, organizationId: string, users: ReadonlyArray<{ userId: string; viewer: boolean }>): Promise<void> {
  for (let i = 0; i < users.length; i += 500) {
    const batch = users.slice(i, i + 500).map(({ userId, viewer }) => ({ userId, name: userId, email: `${userId}@load.invalid`, accessRole: viewer ? 'viewer' : 'editor' }));
    await required(auth, '/v2/users/add', { organizationId, users: batch });
  }
}

/** Mints a user JWT: `editor` on the whole organization, or `viewer` on one document. */
export async function mintToken(auth: RestAuth, userId: string, organizationId: string, viewerOf?: string): Promise<string> {
  const resources =
    viewerOf === undefined
      ? [{ type: 'organization', id: organizationId, accessRole: 'editor' }]
      : [{ type: 'document', id: viewerOf, organizationId, accessRole: 'viewer' }];
  const data = (await required(auth, '/v2/auth/generate_token', {
    userId,
    userProperties: { name: userId, email: `${userId}@load.invalid` },
    permissions: { resources },
  })) as { token?: unknown };
  if (typeof data.token !== 'string') throw new Error('/v2/auth/generate_token answered without a token');
  return data.token;
}

export interface OperationContext {
  readonly organizationId: string;
  readonly documentId: string;
  readonly editorId: string;
  readonly userId: string;
}

/** Path and body of one REST-mix operation. */
export function mixRequest(op: RestOperation, c: OperationContext): { path: string; data: unknown } {
  const scope = { organizationId: c.organizationId, documentId: c.documentId };
  switch (op) {
    case 'comments.get':
      return { path: '/v2/commentannotations/get', data: { ...scope, pageSize: 20 } };
    case 'comments.count':
      return { path: '/v2/commentannotations/count/get', data: { organizationId: c.organizationId, documentIds: [c.documentId], userId: c.userId } };
    case 'presence.get':
      return { path: '/v2/presence/get', data: scope };
    case 'presence.update':
      return { path: '/v2/presence/update', data: { ...scope, users: [{ userId: c.userId, name: c.userId, status: 'online' }] } };
    case 'documents.get':
      return { path: '/v2/organizations/documents/get', data: { organizationId: c.organizationId, documentIds: [c.documentId] } };
    case 'crdt.get':
      return { path: '/v2/crdt/get', data: { ...scope, editorId: c.editorId } };
  }
}

const author = (userId: string): { userId: string; name: string; email: string } => ({ userId, name: userId, email: `${userId}@load.invalid` });

/** A new comment thread with its first comment; the annotation id is ours so replies need not wait for the answer. */
export function threadRequest(c: OperationContext, annotationId: string, text: string): { path: string; data: unknown } {
  return {
    path: '/v2/commentannotations/add',
    data: { organizationId: c.organizationId, documentId: c.documentId, commentAnnotations: [{ annotationId, commentData: [{ commentText: text, from: author(c.userId) }] }] },
  };
}

export function replyRequest(c: OperationContext, annotationId: string, text: string): { path: string; data: unknown } {
  return {
    path: '/v2/commentannotations/comments/add',
    data: { organizationId: c.organizationId, documentId: c.documentId, annotationId, commentData: [{ commentText: text, from: author(c.userId) }] },
  };
}
