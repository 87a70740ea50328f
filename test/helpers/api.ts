// Test helper: a raw REST caller for the POST/`data` envelope (bad input, headers), the typed client, and a workspace fixture.
import { PlaitClient } from 'plait/client';
export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON body (the whole envelope). */
  readonly body: { result?: { status: string; message: string; data: T; [extra: string]: unknown }; error?: { status: string; message: string; details?: unknown } };
}

export interface Credentials {
  readonly workspaceId: string;
  readonly workspaceToken: string;
  readonly apiKey: string;
  readonly authToken: string;
}

let emailCounter = 0;

export class ApiClient {
  constructor(readonly baseUrl: string) {}

  /** POSTs `{data}` (or `raw` text as the body) with JSON content type unless headers say otherwise. */
  async post<T = unknown>(path: string, data: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    return this.send<T>(path, JSON.stringify({ data }), headers);
  }

  async send<T = unknown>(path: string, body: string, headers: Record<string, string> = {}, method = 'POST'): Promise<ApiResponse<T>> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text === '' ? {} : (JSON.parse(text) as ApiResponse<T>['body']) };
  }

  /** POST with API-key auth headers. */
  async call<T = unknown>(credentials: Credentials, path: string, data: unknown): Promise<ApiResponse<T>> {
    return this.post<T>(path, data, apiKeyHeaders(credentials));
  }

  /** The typed client (`plait/client`) for this server, with the workspace's and its API key's credentials when given. */
  client(credentials?: Credentials): PlaitClient {
    return new PlaitClient({
      baseUrl: this.baseUrl,
      ...(credentials === undefined
        ? {}
        : { apiKey: credentials.apiKey, authToken: credentials.authToken, workspaceId: credentials.workspaceId, workspaceAuthToken: credentials.workspaceToken }),
    });
  }

  /** Creates a fresh workspace and returns its credentials, with the API key's auth token already fetched. */
  async createWorkspace(ownerEmail = `owner${++emailCounter}.${process.pid}@example.com`): Promise<Credentials> {
    const created = await this.client().workspaceCreate<{ id: string; authToken: string; apiKeyList: Record<string, unknown> }>({ ownerEmail });
    const workspace = created.data;
    const apiKey = Object.keys(workspace.apiKeyList)[0];
    if (apiKey === undefined) throw new Error('workspace/create returned no API key');
    const asOwner = this.client().with({ workspaceId: workspace.id, workspaceAuthToken: workspace.authToken });
    const tokens = await asOwner.workspaceAuthtokensGet<{ authTokens: Array<{ token: string }> }>({ apiKey });
    const authToken = tokens.data.authTokens[0]?.token;
    if (authToken === undefined) throw new Error(`authtokens/get returned no token: ${JSON.stringify(tokens)}`);
    return { workspaceId: workspace.id, workspaceToken: workspace.authToken, apiKey, authToken };
  }
}

export function apiKeyHeaders(credentials: Credentials): Record<string, string> {
  return { 'x-svc-api-key': credentials.apiKey, 'x-svc-auth-token': credentials.authToken };
}

export function workspaceHeaders(credentials: Credentials): Record<string, string> {
  return { 'x-svc-workspace-id': credentials.workspaceId, 'x-svc-workspace-auth-token': credentials.workspaceToken };
}
