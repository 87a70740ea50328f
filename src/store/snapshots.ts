// Owns document snapshots: loading a document (snapshot + log tail per store) and folding a log into a snapshot.
import type { Database, Key } from 'lmdb';
import type { Store } from './env.js';
import { DB, KEY_END } from './keys.js';
import { decodeLogRow } from './log-rows.js';
import { removeNumbered } from './replication.js';

/** The root type of an editor doc's content (the REST CRDT `type`), stored with its meta. */
export type StoreType = 'text' | 'map' | 'array' | 'xml';

/** One editor doc's record in DB.editorDocMeta, written in the same transaction as its log entries. */
export interface StoreMeta {
  type: StoreType | null;
  contentKey: string;
  /** Milliseconds since epoch of the latest change. */
  lastUpdate: number;
  lastUpdatedBy: string;
  sessionId: string | null;
  /** Log entries with a sequence number below this are folded into the snapshot. */
  foldedSeq: number;
}

/** [apiKey, organizationId, documentId, editorId]: one Yjs document (a "store" in the REST spec). */
export type StoreId = readonly [string, string, string, string];

export interface LoadedStore {
  readonly editorId: string;
  readonly meta: StoreMeta;
  readonly snapshot: Uint8Array | undefined;
  /** The log tail after the snapshot, in sequence order. */
  readonly updates: readonly Uint8Array[];
  readonly nextSeq: number;
  readonly logBytes: number;
}


/** lmdb-js may hand out buffers it reuses; Yjs keeps subarrays of what it decodes, so load copies. */
const copy = (bytes: Uint8Array): Uint8Array => new Uint8Array(bytes);

export class Snapshots {
  private readonly updates: Database<Uint8Array, Key> | undefined;
  private readonly snapshots: Database<Uint8Array, Key> | undefined;
  private readonly stores: Database<StoreMeta, Key> | undefined;

  /** `store` null = persistence off: nothing is read or written. */
  constructor(store: Store | null) {
    this.updates = store?.binary(DB.docUpdates);
    this.snapshots = store?.binary(DB.docSnapshots);
    this.stores = store?.records<StoreMeta>(DB.editorDocMeta);
  }

  /** Every store of a document: its meta, snapshot and the log entries not folded into it. */
  load(apiKey: string, organizationId: string, documentId: string): LoadedStore[] {
    if (this.stores === undefined || this.updates === undefined || this.snapshots === undefined) return [];
    const loaded: LoadedStore[] = [];
    const prefix = [apiKey, organizationId, documentId];
    for (const { key, value: meta } of this.stores.getRange({ start: prefix, end: [...prefix, KEY_END] })) {
      const editorId = (key as Key[])[3];
      if (typeof editorId !== 'string') continue;
      const id: StoreId = [apiKey, organizationId, documentId, editorId];
      const stored = this.snapshots.get([...id]);
      const updates: Uint8Array[] = [];
      let nextSeq = meta.foldedSeq;
      let logBytes = 0;
      for (const entry of this.updates.getRange({ start: [...id, meta.foldedSeq], end: [...id, KEY_END] })) {
        const seq = (entry.key as Key[])[4];
        if (typeof seq !== 'number') continue;
        // A row is one update or a commit's batch of them (src/store/log-rows.ts); copied first: lmdb-js may reuse its buffer.
        for (const update of decodeLogRow(copy(entry.value))) updates.push(update);
        logBytes += entry.value.length;
        nextSeq = seq + 1;
      }
      loaded.push({ editorId, meta, snapshot: stored === undefined ? undefined : copy(stored), updates, nextSeq, logBytes });
    }
    return loaded;
  }

  /** Writes one log entry; only inside a write transaction. */
  putEntry(id: StoreId, seq: number, update: Uint8Array): void {
    void this.updates?.put([...id, seq], update);
  }

  /** Writes a store's meta; only inside a write transaction. */
  putMeta(id: StoreId, meta: StoreMeta): void {
    void this.stores?.put([...id], meta);
  }

  /** Removes every store, snapshot and log entry under a key prefix ([apiKey, org] or [apiKey, org, doc]); only inside a write transaction. */
  removeAll(prefix: readonly string[]): void {
    for (const db of [this.updates, this.snapshots, this.stores]) {
      if (db === undefined) continue;
      const keys = [...db.getKeys({ start: [...prefix], end: [...prefix, KEY_END] })];
      for (const key of keys) void db.remove(key);
    }
  }

  /**
   * Replaces the snapshot and deletes the log entries it folds (sequence < boundary); only inside a write
   * transaction, so a reader sees either the old snapshot with its log or the new one without it.
   */
  fold(id: StoreId, snapshot: Uint8Array, meta: StoreMeta, boundary: number): void {
    if (this.updates === undefined || this.snapshots === undefined) return;
    void this.snapshots.put([...id], snapshot);
    this.putMeta(id, { ...meta, foldedSeq: boundary });
    // One range removal, not a remove per entry: in cluster mode it is replicated as one op (src/store/replication.ts).
    removeNumbered(this.updates, id, 0, boundary);
  }
}
