// Test helper for the comment and presence tests: a real server, one workspace, and a call() that unwraps the envelope.
import type { Test } from 'tap';
import type { Config } from '../../src/config.js';
import type { ServerOptions } from '../../src/services.js';
import type { Credentials } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

export interface Called<T> {
  readonly status: number;
  readonly data: T;
  /** Siblings of `data` in `result` (nextPageToken). */
  readonly extra: Record<string, unknown>;
  readonly error?: { status: string; message: string };
}

export interface Env {
  readonly server: TestServer;
  readonly creds: Credentials;
  call<T = unknown>(path: string, data: unknown): Promise<Called<T>>;
}

export function envFor(server: TestServer, creds: Credentials): Env {
  return {
    server,
    creds,
    call: async <T>(path: string, data: unknown): Promise<Called<T>> => {
      const res = await server.api.call<T>(creds, path, data);
      const result = res.body.result;
      const extra: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(result ?? {})) if (!['status', 'message', 'data'].includes(key)) extra[key] = value;
      return { status: res.status, data: result?.data as T, extra, ...(res.body.error === undefined ? {} : { error: res.body.error }) };
    },
  };
}

export async function env(t: Test, overrides: Partial<Config> = {}, options: ServerOptions = {}): Promise<Env> {
  const server = await startTestServer(t, overrides, undefined, options);
  return envFor(server, await server.api.createWorkspace());
}
