// Owns live state (upstream 2.21 livestate/broadcast): named JSON values per document, replaced or merged, kept and sent live.
import type { Database, Key } from 'lmdb';
import { invalidArgument } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB, KEY_END } from '../store/keys.js';
import type { ConnectionListener, DocumentActorLoader } from './peer.js';
import type { DocumentKey } from '../document-key.js';

/** Most live state ids one document holds; every joiner with extension frames is sent all of them. */
export const MAX_LIVE_STATES_PER_DOCUMENT = 100;

/** One value as stored and as sent (the body of extension frame 101, docs/protocol.md). */
export interface LiveStateValue {
  readonly organizationId: string;
  readonly documentId: string;
  readonly liveStateDataId: string;
  readonly data: unknown;
  /** ms since epoch of the broadcast that set it. */
  readonly updatedAt: number;
}

interface StoredLiveState {
  readonly data: unknown;
  readonly updatedAt: number;
}

export interface LiveStateDeps {
  readonly store: Store;
  /** Runs a task in the document's actor, loading it first. */
  readonly actors: DocumentActorLoader;
  readonly encode: (value: LiveStateValue) => Uint8Array;
  readonly now: () => number;
  readonly log: Pick<Logger, 'error'>;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A deep merge of JSON values: objects merge key by key, anything else (arrays included) replaces. Keys are
 * defined as own properties, so a key named `__proto__` is data, never the prototype.
 */
export function mergeLiveState(base: unknown, patch: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(patch)) return patch;
  const merged: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) Object.defineProperty(merged, key, { value, enumerable: true, writable: true, configurable: true });
  for (const [key, value] of Object.entries(patch)) {
    const next = Object.hasOwn(merged, key) ? mergeLiveState(merged[key], value) : value;
    Object.defineProperty(merged, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return merged;
}

export class LiveStates {
  private readonly db: Database<StoredLiveState, Key>;

  constructor(private readonly deps: LiveStateDeps) {
    this.db = deps.store.records<StoredLiveState>(DB.liveState);
  }

  /**
   * Sets one value (replacing it, or merging into it), commits it, then sends it to the document's connections that
   * take extension frames. Runs in the document's mailbox, so broadcasts of one document are applied and sent in order.
   */
  broadcast(key: DocumentKey, liveStateDataId: string, data: unknown, merge: boolean): Promise<LiveStateValue> {
    return this.deps.actors.use(key, (actor) =>
      actor.run(async () => {
        const storeKey = [key.apiKey, key.organizationId, key.documentId, liveStateDataId];
        const existing = this.db.get(storeKey);
        if (existing === undefined && this.count(key) >= MAX_LIVE_STATES_PER_DOCUMENT) {
          throw invalidArgument(`data.liveStateDataId: a document holds at most ${MAX_LIVE_STATES_PER_DOCUMENT} live state ids`);
        }
        const stored: StoredLiveState = { data: merge && existing !== undefined ? mergeLiveState(existing.data, data) : data, updatedAt: this.deps.now() };
        await this.deps.store.transaction(() => this.db.putSync(storeKey, stored));
        const value: LiveStateValue = { organizationId: key.organizationId, documentId: key.documentId, liveStateDataId, ...stored };
        actor.broadcast(this.deps.encode(value));
        return value;
      }),
    );
  }

  /** The document's values, in id order. */
  list(key: DocumentKey): LiveStateValue[] {
    const prefix = [key.apiKey, key.organizationId, key.documentId];
    return Array.from(this.db.getRange({ start: prefix, end: [...prefix, KEY_END] }), ({ key: storeKey, value }) => ({
      organizationId: key.organizationId,
      documentId: key.documentId,
      liveStateDataId: String((storeKey as unknown[])[3]),
      data: value.data,
      updatedAt: value.updatedAt,
    }));
  }

  /** Late joiners that take extension frames get every current value (told inside the mailbox, after SyncStep1). */
  connectionListener(): ConnectionListener {
    return {
      joined: (peer, actor) => {
        if (!peer.extensions) return;
        for (const value of this.list(actor.key)) actor.sendTo(peer.sessionId, this.deps.encode(value));
      },
      left: () => undefined,
    };
  }

  private count(key: DocumentKey): number {
    const prefix = [key.apiKey, key.organizationId, key.documentId];
    return this.db.getKeysCount({ start: prefix, end: [...prefix, KEY_END], limit: MAX_LIVE_STATES_PER_DOCUMENT });
  }
}
