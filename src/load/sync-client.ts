// Owns one load client's sync connection: the server's own stock provider (y-websocket for Plait and y-websocket, Hocuspocus's for Hocuspocus) and its connection events.
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import type { Awareness } from 'y-protocols/awareness';
import * as Y from 'yjs';

export const TARGET_KINDS = ['plait', 'y-websocket', 'hocuspocus'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

export interface SyncTarget {
  readonly kind: TargetKind;
  /** The deployment's base URL as given (http(s) or ws(s)). */
  readonly url: string;
  /** Plait only: the organization the run's documents live in. */
  readonly organizationId?: string;
  /** Plait only: the editor id every client of a document shares (one Y.Doc per editor id). */
  readonly editorId?: string;
}

export interface ConnectionEvents {
  /** The socket opened (first time and after every reconnect). */
  connected(): void;
  /** The socket closed while the client still wanted it (the provider reconnects by itself). */
  disconnected(code: number | undefined, reason: string): void;
  /** The first sync handshake completed (and again after each reconnect). */
  synced(): void;
}

export interface SyncConnection {
  readonly doc: Y.Doc;
  readonly awareness: Awareness;
  /** Whether the provider has completed the sync handshake on the current socket. */
  isSynced(): boolean;
  destroy(): void;
}

// one provider per client adds a process 'exit' listener (y-websocket); thousands are expected here
process.setMaxListeners(0);

const wsUrl = (url: string): string => url.replace(/^http/, 'ws').replace(/\/+$/, '');
const polyfill = WebSocket as unknown as typeof globalThis.WebSocket;

type HocuspocusModule = typeof import('@hocuspocus/provider');
let hocuspocus: HocuspocusModule | undefined;

/** Loads what a target's clients need before the first one opens (Hocuspocus's provider is a devDependency, loaded only for it). */
export async function prepareTarget(target: SyncTarget): Promise<void> {
  if (target.kind !== 'hocuspocus' || hocuspocus !== undefined) return;
  try {
    hocuspocus = await import('@hocuspocus/provider');
  } catch (error) {
    throw new Error(`a Hocuspocus target needs the @hocuspocus/provider package (npm install @hocuspocus/provider): ${(error as Error).message}`);
  }
}

/** Opens a connection to `documentId`; `token` is the Plait user JWT (ignored by the other servers). */
export function openSync(target: SyncTarget, documentId: string, token: string | undefined, events: ConnectionEvents): SyncConnection {
  const doc = new Y.Doc();
  if (target.kind === 'hocuspocus') return openHocuspocus(target, documentId, doc, events);
  const provider =
    target.kind === 'plait'
      ? new WebsocketProvider(`${wsUrl(target.url)}/sync`, [target.organizationId ?? '', documentId, target.editorId ?? 'main'].map(encodeURIComponent).join('/'), doc, {
          WebSocketPolyfill: polyfill,
          disableBc: true,
          params: token === undefined ? {} : { token },
        })
      : new WebsocketProvider(wsUrl(target.url), documentId, doc, { WebSocketPolyfill: polyfill, disableBc: true });
  provider.awareness.setLocalState(null);
  provider.on('status', ({ status }: { status: string }) => {
    if (status === 'connected') events.connected();
  });
  provider.on('connection-close', (event: { code?: number; reason?: string } | null) => {
    // null: closed by the provider itself (destroy, or its no-message watchdog, which reconnects)
    if (event !== null) events.disconnected(event.code, event.reason ?? '');
    else if (provider.shouldConnect) events.disconnected(undefined, 'closed by the client watchdog');
  });
  provider.on('sync', (state: boolean) => {
    if (state) events.synced();
  });
  return {
    doc,
    awareness: provider.awareness,
    isSynced: () => provider.synced,
    destroy: () => {
      provider.destroy();
      doc.destroy();
    },
  };
}

function openHocuspocus(target: SyncTarget, documentId: string, doc: Y.Doc, events: ConnectionEvents): SyncConnection {
  if (hocuspocus === undefined) throw new Error('prepareTarget() was not awaited for a Hocuspocus target');
  const { HocuspocusProvider, HocuspocusProviderWebsocket } = hocuspocus;
  const socket = new HocuspocusProviderWebsocket({ url: wsUrl(target.url), WebSocketPolyfill: WebSocket });
  const provider = new HocuspocusProvider({ websocketProvider: socket, name: documentId, document: doc });
  provider.attach();
  const awareness = provider.awareness;
  if (awareness === null) throw new Error('the Hocuspocus provider has no awareness');
  awareness.setLocalState(null);
  let synced = false;
  provider.on('status', ({ status }: { status: string }) => {
    if (status === 'connected') events.connected();
  });
  provider.on('disconnect', ({ event }: { event: { code?: number; reason?: string } }) => {
    synced = false;
    events.disconnected(event.code, event.reason ?? '');
  });
  provider.on('synced', ({ state }: { state: boolean }) => {
    synced = state;
    if (state) events.synced();
  });
  return {
    doc,
    awareness: awareness as unknown as Awareness,
    isSynced: () => synced,
    destroy: () => {
      provider.destroy();
      socket.destroy();
      doc.destroy();
    },
  };
}
