// Test helper: a real server with one workspace, and a caller for its directory operations.
import type { Test } from 'tap';
import type { ApiResponse, Credentials } from './api.js';
import { startTestServer, type TestServer } from './server.js';

export interface DirectoryFixture extends TestServer {
  readonly credentials: Credentials;
  /** POSTs `{data}` with the workspace's API-key headers. */
  call<T = unknown>(path: string, data: unknown): Promise<ApiResponse<T>>;
}

export interface ItemResult {
  success: boolean;
  message: string;
  code?: string;
  [extra: string]: unknown;
}

export async function directoryFixture(t: Test): Promise<DirectoryFixture> {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  return { ...server, credentials, call: (path, data) => server.api.call(credentials, path, data) };
}

/** The `data` of a success envelope; fails the test with the whole body otherwise. */
export function dataOf<T>(t: Test, response: ApiResponse<T>): T {
  if (response.body.result === undefined) {
    t.fail(`expected success, got ${response.status} ${JSON.stringify(response.body)}`);
    throw new Error('not a success envelope');
  }
  t.equal(response.body.result.status, 'success');
  return response.body.result.data;
}

/** Asserts an error envelope with `status` whose message matches `message`. */
export function expectError(t: Test, response: ApiResponse, status: string, message: RegExp): void {
  t.equal(response.body.error?.status, status, `error status ${status}: ${JSON.stringify(response.body)}`);
  t.match(response.body.error?.message ?? '', message);
}

/** Ids of a bulk map that succeeded and that failed, each sorted. */
export function outcome(map: Record<string, ItemResult>): { ok: string[]; failed: string[] } {
  const entries = Object.entries(map);
  return {
    ok: entries.filter(([, item]) => item.success).map(([id]) => id).sort(),
    failed: entries.filter(([, item]) => !item.success).map(([id]) => id).sort(),
  };
}
