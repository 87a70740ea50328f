// Owns the console's REST calls: the POST/`data` envelope with the API key headers, errors as thrown messages.

export interface Credentials {
  readonly apiKey: string;
  readonly authToken: string;
}

export class ApiError extends Error {
  constructor(readonly status: string, message: string) {
    super(`${status}: ${message}`);
  }
}

/** POSTs `{data}` to this server with the API key headers; resolves with `result.data` and the page token. */
export async function call<T>(credentials: Credentials, path: string, data: unknown): Promise<{ data: T; nextPageToken?: string }> {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-api-key': credentials.apiKey, 'x-svc-auth-token': credentials.authToken },
    body: JSON.stringify({ data }),
  });
  const body = (await response.json()) as { result?: { data: T; nextPageToken?: string; pageToken?: string }; error?: { status: string; message: string } };
  if (body.error !== undefined) throw new ApiError(body.error.status, body.error.message);
  if (body.result === undefined) throw new ApiError('INTERNAL', `unexpected answer from ${path}`);
  const next = body.result.nextPageToken ?? body.result.pageToken;
  return next === undefined ? { data: body.result.data } : { data: body.result.data, nextPageToken: next };
}

export interface Organization {
  readonly id: string;
  readonly organizationName?: string;
  readonly disabled?: boolean;
}

export interface DocumentRow {
  readonly id: string;
  readonly documentName?: string;
  readonly accessType?: string;
  readonly disabled?: boolean;
}

export interface UserRow {
  readonly userId: string;
  readonly name?: string;
  readonly email?: string;
  readonly accessRole?: string;
}

export interface CommentView {
  readonly commentId: number;
  readonly commentText?: string;
  readonly from?: { userId: string; name?: string };
}

export interface Thread {
  readonly annotationId: string;
  readonly status?: { id?: string; name?: string };
  readonly comments: readonly CommentView[];
}

export interface PresenceUser {
  readonly userId: string;
  readonly name?: string;
  readonly status?: string;
}
