// Test helper: user tokens, stock y-websocket providers and raw sockets against a test server's /sync endpoint.
import type { Test } from 'tap';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import type { ApiClient, Credentials } from './api.js';
import { startTestServer } from './server.js';

export interface Room {
  readonly organizationId: string;
  readonly documentId: string;
  readonly editorId: string;
}

export interface Resource {
  type: 'organization' | 'document' | 'folder';
  id: string;
  organizationId?: string;
  accessRole?: 'viewer' | 'editor';
  expiresAt?: number;
}

let userCounter = 0;

/** Mints a user JWT through /v2/auth/generate_token carrying `resources`. */
export async function userToken(api: ApiClient, credentials: Credentials, resources: Resource[], userId = `user-${++userCounter}`): Promise<string> {
  const response = await api.call<{ token: string }>(credentials, '/v2/auth/generate_token', {
    userId,
    userProperties: { name: userId, email: `${userId}@example.com` },
    permissions: { resources },
  });
  const token = response.body.result?.data.token;
  if (token === undefined) throw new Error(`generate_token failed: ${JSON.stringify(response.body)}`);
  return token;
}

export const editorOf = (room: Room): Resource => ({ type: 'document', id: room.documentId, organizationId: room.organizationId, accessRole: 'editor' });
export const viewerOf = (room: Room): Resource => ({ type: 'document', id: room.documentId, organizationId: room.organizationId, accessRole: 'viewer' });

export const syncBase = (httpUrl: string): string => `${httpUrl.replace(/^http/, 'ws')}/sync`;
export const roomName = (room: Room): string =>
  [room.organizationId, room.documentId, room.editorId].map(encodeURIComponent).join('/');

export interface Client {
  readonly doc: Y.Doc;
  readonly provider: WebsocketProvider;
  /** The 'content' root as text (defined on first use, so a test may use the root as another type instead). */
  readonly text: Y.Text;
}

/** A stock y-websocket provider (ws as WebSocket, no BroadcastChannel), destroyed at teardown. */
export function connect(t: Test, httpUrl: string, room: Room, token: string, params: Record<string, string> = {}): Client {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(syncBase(httpUrl), roomName(room), doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: { token, ...params },
  });
  t.teardown(() => {
    provider.destroy();
    doc.destroy();
  });
  return {
    doc,
    provider,
    get text() {
      return doc.getText('content');
    },
  };
}

/** A test server, an editor token for `room` in a new workspace, and two stock providers on it, both synced. */
export async function twoEditors(t: Test, room: Room): Promise<{ api: ApiClient; url: string; token: string; a: Client; b: Client }> {
  const { api, url } = await startTestServer(t);
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const a = connect(t, url, room, token);
  const b = connect(t, url, room, token);
  await Promise.all([synced(a), synced(b)]);
  return { api, url, token, a, b };
}

/** Resolves once the provider has completed its first sync with the server. */
export function synced(client: Client): Promise<void> {
  if (client.provider.synced) return Promise.resolve();
  return new Promise((resolve) => {
    const onSync = (state: boolean): void => {
      if (!state) return;
      client.provider.off('sync', onSync);
      resolve();
    };
    client.provider.on('sync', onSync);
  });
}

/** The code and reason of the provider's next close (the stock client reconnects after it). */
export function nextClose(client: Client): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => {
    const onClose = (event: { code: number; reason: string } | null): void => {
      if (event === null) return;
      client.provider.off('connection-close', onClose);
      resolve({ code: event.code, reason: event.reason });
    };
    client.provider.on('connection-close', onClose);
  });
}

/**
 * Resolves at the client's next completed sync, which comes after a reconnect. Call it before causing the
 * disconnect: the provider reports sync(false) when its socket closes and sync(true) after the resync, and a
 * listener registered later could miss either (waiting once for 'sync' would take the false one and hang).
 */
export function resynced(client: Client): Promise<void> {
  return new Promise((resolve) => {
    let disconnected = !client.provider.synced;
    const onSync = (state: boolean): void => {
      if (!state) {
        disconnected = true;
        return;
      }
      if (!disconnected) return;
      client.provider.off('sync', onSync);
      resolve();
    };
    client.provider.on('sync', onSync);
  });
}

/** Resolves when `check` holds, re-checking after every update of `docs` (no polling, no sleeps). */
export function whenDocs(docs: readonly Y.Doc[], check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const probe = (): void => {
      if (!check()) return;
      for (const doc of docs) doc.off('update', probe);
      resolve();
    };
    for (const doc of docs) doc.on('update', probe);
    probe();
  });
}

/** The close (code, reason) of a socket, or the HTTP status when the upgrade was refused. */
export interface SocketEnd {
  readonly code?: number;
  readonly reason?: string;
  readonly httpStatus?: number;
}

/** A raw `ws` client: resolves with the open socket, or rejects with the refused upgrade's HTTP status. */
export function rawSocket(url: string): Promise<{ socket: WebSocket; ended: Promise<SocketEnd>; frames: Uint8Array[] }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const frames: Uint8Array[] = [];
    const ended = new Promise<SocketEnd>((done) => socket.on('close', (code, reason) => done({ code, reason: reason.toString() })));
    socket.on('message', (data: Buffer) => frames.push(new Uint8Array(data)));
    socket.on('open', () => resolve({ socket, ended, frames }));
    socket.on('unexpected-response', (_request, response) => {
      reject(Object.assign(new Error(`upgrade refused with ${response.statusCode}`), { httpStatus: response.statusCode }));
      socket.terminate();
    });
    socket.on('error', (error) => reject(error));
  });
}

/** The HTTP status a refused upgrade answered with (throws if the upgrade succeeded). */
export async function upgradeStatus(url: string): Promise<number> {
  try {
    const { socket } = await rawSocket(url);
    socket.terminate();
  } catch (error) {
    const status = (error as { httpStatus?: number }).httpStatus;
    if (status !== undefined) return status;
    throw error;
  }
  throw new Error(`the upgrade of ${url} succeeded`);
}
