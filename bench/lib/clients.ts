// Owns the bench's sync clients: each server's own stock provider (y-websocket or Hocuspocus) on a Y.Doc, plus Plait credentials.
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { ApiClient, apiKeyHeaders } from '../../test/helpers/api.js';
import { protocolOf, type ServerHandle } from './launch.js';

export interface SyncTarget {
  readonly protocol: 'plait' | 'hocuspocus' | 'y-websocket';
  readonly port: number;
  /** Plait only: the organization the documents live in and a user JWT with editor access to it. */
  readonly plait?: { readonly organizationId: string; readonly token: string };
}

export interface SyncClient {
  readonly doc: Y.Doc;
  /** Resolves when the provider reports its first sync with the server. */
  readonly synced: Promise<void>;
  /** Times the connection dropped after opening (backpressure closes, server errors). */
  readonly disconnects: () => number;
  /** Close codes and reasons of those drops ("1006 ", "4xxx backpressure…"). */
  readonly closes: string[];
  destroy(): void;
}

// the stock y-websocket provider adds one process 'exit' listener per provider; hundreds are expected here
process.setMaxListeners(0);

/** The editor id every bench client uses, so that clients of one document share one Plait store. */
export const EDITOR_ID = 'main';
const ORGANIZATION_ID = 'bench-org';

/** Creates a workspace on a Plait server and mints one user token with editor access to the bench organization. */
export async function plaitCredentials(port: number): Promise<{ organizationId: string; token: string; headers: Record<string, string> }> {
  const api = new ApiClient(`http://127.0.0.1:${port}`);
  const credentials = await api.createWorkspace(`bench.${process.pid}.${Date.now()}@example.com`);
  const minted = await api.call<{ token: string }>(credentials, '/v2/auth/generate_token', {
    userId: 'bench-user',
    userProperties: { name: 'Bench User', email: 'bench-user@example.com' },
    permissions: { resources: [{ type: 'organization', id: ORGANIZATION_ID }] },
  });
  const token = minted.body.result?.data.token;
  if (token === undefined) throw new Error(`generate_token failed: ${minted.status} ${JSON.stringify(minted.body)}`);
  return { organizationId: ORGANIZATION_ID, token, headers: apiKeyHeaders(credentials) };
}

/** POSTs `{ data }` to a Plait on `port` with `headers`; anything but 200 throws with the answer. */
export async function postPlait(port: number, headers: Record<string, string>, path: string, data: unknown): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

export async function syncTarget(server: ServerHandle): Promise<SyncTarget> {
  const protocol = protocolOf(server.kind);
  if (protocol === 'http') throw new Error(`${server.kind} is not a sync server`);
  if (protocol !== 'plait') return { protocol, port: server.port };
  const { organizationId, token } = await plaitCredentials(server.port);
  return { protocol, port: server.port, plait: { organizationId, token } };
}

/** Connects one client to `documentName`. Awareness is switched off (local state null) for every server alike. */
export function connectClient(target: SyncTarget, documentName: string, doc = new Y.Doc()): SyncClient {
  let disconnects = 0;
  const closes: string[] = [];
  const closed = (event: { code?: number; reason?: string } | null | undefined): void => {
    disconnects++;
    if (closes.length < 20) closes.push(`${event?.code ?? '?'} ${event?.reason ?? ''} at ${(performance.now() / 1000).toFixed(1)} s`.replace('  ', ' '));
  };
  if (target.protocol === 'hocuspocus') {
    // one socket per client, as with the other servers (Hocuspocus could multiplex documents on one)
    const socket = new HocuspocusProviderWebsocket({ url: `ws://127.0.0.1:${target.port}`, WebSocketPolyfill: WebSocket });
    const provider = new HocuspocusProvider({ websocketProvider: socket, name: documentName, document: doc });
    provider.attach();
    provider.awareness?.setLocalState(null);
    provider.on('disconnect', ({ event }: { event: { code?: number; reason?: string } }) => closed(event));
    const synced = new Promise<void>((resolve) => {
      if (provider.isSynced) resolve();
      provider.on('synced', ({ state }: { state: boolean }) => {
        if (state) resolve();
      });
    });
    const destroy = (): void => {
      provider.destroy();
      socket.destroy();
      release(doc);
    };
    return { doc, synced, disconnects: () => disconnects, closes, destroy };
  }
  const polyfill = WebSocket as unknown as typeof globalThis.WebSocket;
  const provider =
    target.protocol === 'plait'
      ? new WebsocketProvider(`ws://127.0.0.1:${target.port}/sync`, `${plaitOf(target).organizationId}/${documentName}/${EDITOR_ID}`, doc, {
          WebSocketPolyfill: polyfill,
          disableBc: true,
          params: { token: plaitOf(target).token },
        })
      : new WebsocketProvider(`ws://127.0.0.1:${target.port}`, documentName, doc, { WebSocketPolyfill: polyfill, disableBc: true });
  provider.awareness.setLocalState(null);
  provider.on('connection-close', (event: { code?: number; reason?: string } | null) => closed(event));
  const synced = new Promise<void>((resolve) => {
    if (provider.synced) resolve();
    provider.on('sync', (isSynced: boolean) => {
      if (isSynced) resolve();
    });
  });
  const destroy = (): void => {
    provider.destroy();
    release(doc);
  };
  return { doc, synced, disconnects: () => disconnects, closes, destroy };
}

/**
 * Destroys a client's Y.Doc once its provider is gone. The provider's Awareness (y-protocols) runs a check interval
 * until its doc is destroyed, and neither provider's destroy() ends it: every client of every round stayed in memory
 * with its document (the 1×500 fan-out bench grew ~0.5 GB of heap per round, 3.1 GB after eight), and the bench
 * process's own garbage collection then showed up as 1–2 s latency spikes in later rounds, whichever server was
 * measured, until it ran out of heap (bench/README.md, "The bench client's leak"). The content stays readable.
 */
function release(doc: Y.Doc): void {
  doc.destroy();
}

function plaitOf(target: SyncTarget): { organizationId: string; token: string } {
  if (target.plait === undefined) throw new Error('a Plait target needs credentials (use syncTarget)');
  return target.plait;
}

/** Rejects if `promise` does not settle within `ms` (every wait in the benches is bounded). */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Connects `count` clients with at most `concurrency` handshakes in flight; all must sync within `timeoutMs`. */
export async function connectMany(
  target: SyncTarget,
  names: readonly string[],
  { concurrency = 25, timeoutMs = 120_000, makeDoc }: { concurrency?: number; timeoutMs?: number; makeDoc?: (index: number) => Y.Doc } = {},
): Promise<SyncClient[]> {
  const clients: SyncClient[] = [];
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < names.length; i += concurrency) {
    const batch = names.slice(i, i + concurrency).map((name, j) => connectClient(target, name, makeDoc?.(i + j) ?? new Y.Doc()));
    clients.push(...batch);
    const left = deadline - Date.now();
    try {
      await within(Promise.all(batch.map((c) => c.synced)), Math.max(1, left), `${names.length} clients to sync (${clients.length} started)`);
    } catch (error) {
      for (const client of clients) client.destroy();
      throw error;
    }
  }
  return clients;
}
