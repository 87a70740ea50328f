// Owns one editor doc of a document (the CRDT data of one editor id): its Y.Doc, its persisted meta and its position in the update log.
import * as Y from 'yjs';
import type { LoadedStore, StoreId, StoreMeta } from '../store/snapshots.js';
import type { LogStream } from '../store/update-log.js';
import { DEFAULT_CONTENT_KEY, readData } from './crdt.js';
import { coversNothing, encodeSyncStep2, JOIN_FRAME_MIN_BYTES, keepsTail, NO_JOIN_FRAMES, type JoinFrameHolder, type JoinFrames } from './join-state.js';
import { writeSyncStep2, writeUpdate } from '../sync/protocol.js';
import { appendRun, concatRuns } from '../sync/update-concat.js';
import { topics, type UpdateStream } from './fanout.js';
import type { StoreType } from '../store/snapshots.js';
import type { ChangeOrigin, Peer } from './peer.js';
import type { DocumentKey } from '../document-key.js';

/** One record of Get CRDT Data (spec 2.16). */
export interface CrdtRecord {
  readonly data: unknown;
  readonly id: string;
  readonly lastUpdate: string;
  readonly lastUpdatedBy: string;
  readonly sessionId: string | null;
}

/** Transaction origin of updates replayed from disk, which are neither logged again nor published. */
export const LOADING = Symbol('loading');

/** Y.Doc's default gcFilter, shared: the default parameter makes a new closure for every document. */
const COLLECT_ALL = (): boolean => true;
/**
 * A guid names a doc to providers and parents of subdocuments; a server store is neither, and the random uuid
 * Y.Doc makes otherwise costs a string per document.
 */
const SERVER_GUID = 'plait-store';

/** Told every change to a store's doc made after it started listening (the document's actor). */
export interface EditorDocUpdates {
  storeUpdated(store: EditorDoc, update: Uint8Array, origin: unknown): void;
  /** The store's writes failed on their own and are not retried: memory must go back to what is on disk. */
  storeWriteFailed(store: EditorDoc, error: unknown): void;
}

/**
 * A Y.Doc for the server side, which knows its store: one shared `update` handler (EditorDoc.forward) serves every store instead
 * of a closure per document. Nothing emits `load` or `sync` on a doc the server owns (providers do, on theirs) and
 * nothing here awaits whenLoaded/whenSynced, so the handlers Y.Doc's constructor registers for those events (two
 * Sets, three closures, their contexts: ~0.8 KB a document) are dropped.
 */
class StoreDoc extends Y.Doc {
  constructor(readonly editorStore: EditorDoc) {
    super({ guid: SERVER_GUID, gcFilter: COLLECT_ALL });
    this._observers.delete('load');
    this._observers.delete('sync');
  }

  override destroy(): void {
    this.editorStore.dropJoinFrame();
    super.destroy();
  }
}

export class EditorDoc implements LogStream, JoinFrameHolder, UpdateStream {
  readonly doc: Y.Doc = new StoreDoc(this);
  /** Set by `listen`; updates replayed by the constructor come before it, so they are never reported. */
  private listener: EditorDocUpdates | undefined;
  /** The connections of this editor id: the subscribers of its store topic (src/doc/fanout.ts names it). */
  readonly peers = new Set<Peer>();
  nextSeq = 0;
  logCount = 0;
  logBytes = 0;
  snapshotBytes = 0;
  needsSnapshot = false;
  /** True once the store has content or was added through REST: Get lists it, Add refuses it, Update accepts it. */
  exists = false;
  type: StoreType | null = null;
  contentKey = DEFAULT_CONTENT_KEY;
  lastUpdate = 0;
  lastUpdatedBy = '';
  sessionId: string | null = null;
  private foldedSeq = 0;
  /**
   * The late-join answer (src/doc/join-state.ts) in sending order: the Update frames of the changes made since the
   * state was encoded, then the whole state as a SyncStep2 frame, last; undefined when none is kept.
   */
  private joinAnswer: Uint8Array[] | undefined;
  private joinBytes = 0;
  /** topic(), while the store has connections. */
  private topicName: string | undefined;
  /**
   * A small store's answer to its first new joiner after a load from disk: its snapshot and log tail joined by their
   * bytes into one SyncStep2 frame (seedFirstAnswer). Used once; dropped at the first change.
   */
  private firstAnswer: Uint8Array | undefined;

  /** Bytes of the one-time first answer still held (the loaded-documents budget counts them with the store). */
  get firstAnswerBytes(): number {
    return this.firstAnswer?.length ?? 0;
  }

  constructor(
    private readonly key: DocumentKey,
    readonly editorId: string,
    loaded?: LoadedStore,
    private readonly joinFrames: JoinFrames = NO_JOIN_FRAMES,
  ) {
    // The handler goes on after the replay (replayed updates are reported to no one) and before any listener: the
    // join frame must be dropped at every later change, whether an actor listens yet or not.
    if (loaded !== undefined) this.replay(loaded);
    this.doc.on('update', EditorDoc.forward);
  }

  private replay(loaded: LoadedStore): void {
    const { snapshot } = loaded;
    // The tail's runs of one client's consecutive updates, each joined by its bytes (src/sync/update-concat.ts): the
    // tail an editor leaves is mostly one run per editor, applied as one update each instead of one per entry.
    const updates = loaded.updates.length < 2 ? loaded.updates : concatRuns(loaded.updates);
    if (snapshot !== undefined) Y.applyUpdate(this.doc, snapshot, LOADING);
    if (snapshot !== undefined && snapshot.length >= JOIN_FRAME_MIN_BYTES) {
      // A store large enough for a kept join answer: the tail as one update (one integration pass into the large
      // document, ~10 % faster than one per entry at 1 MB, and the answer's second frame).
      const tail = updates.length === 0 ? undefined : updates.length === 1 ? updates[0] : Y.mergeUpdates(updates as Uint8Array[]);
      if (tail !== undefined) Y.applyUpdate(this.doc, tail, LOADING);
      this.seedJoinAnswer(snapshot, tail);
    } else if (updates.length > 0) {
      // A small store: each run applied, all in one transaction. Merging first decodes and encodes every entry once
      // more: for a 1 KB document with a 200-entry tail, merge and apply took 0.7 ms, this 0.3 ms (bench/README.md,
      // "Ninth session").
      this.doc.transact(() => {
        for (const update of updates) Y.applyUpdate(this.doc, update, LOADING);
      }, LOADING);
    }
    if (snapshot !== undefined && snapshot.length < JOIN_FRAME_MIN_BYTES) this.seedFirstAnswer(snapshot, updates);
    const { meta } = loaded;
    this.exists = true;
    this.type = meta.type;
    this.contentKey = meta.contentKey;
    this.lastUpdate = meta.lastUpdate;
    this.lastUpdatedBy = meta.lastUpdatedBy;
    this.sessionId = meta.sessionId;
    this.foldedSeq = meta.foldedSeq;
    this.nextSeq = loaded.nextSeq;
    this.logCount = loaded.updates.length;
    this.logBytes = loaded.logBytes;
    this.snapshotBytes = loaded.snapshot?.length ?? 0;
  }

  /** Reports every later change to the doc to `listener` (one listener: the actor that owns the store). */
  listen(listener: EditorDocUpdates): void {
    this.listener = listener;
  }

  /**
   * Applies a validated client update and says whether it changed anything, without Yjs encoding the change again
   * for the `update` event: the caller logs and publishes the client's own bytes (issue 18: that encoding was a
   * sizeable part of the server's work per update, and the floor does not do it). The listener is not told.
   * "Changed" is Yjs's own test (a new delete or a moved state vector) or a change to what the store holds pending
   * (structs or deletes waiting for what they depend on): pending content must be logged and passed on too, or it
   * would be missing wherever the update that completes it arrives. EditorDoc.forward must stay the doc's only
   * `update` listener, since a second one would not hear client updates.
   */
  applyClientUpdate(update: Uint8Array, origin: Peer): boolean {
    const { doc } = this;
    const store = doc.store;
    const pendingStructs = store.pendingStructs?.update;
    const pendingDs = store.pendingDs;
    // Yjs encodes a transaction's update only when `update` has observers: take the set out for this one apply.
    const observers = doc._observers;
    const listeners = observers.get('update');
    if (listeners !== undefined) observers.delete('update');
    let transaction: Y.Transaction | undefined;
    try {
      doc.transact((tr) => {
        transaction = tr;
        Y.applyUpdate(doc, update, origin);
      }, origin);
    } finally {
      if (listeners !== undefined) observers.set('update', listeners);
    }
    const changed = (transaction !== undefined && changedIn(transaction)) || store.pendingStructs?.update !== pendingStructs || store.pendingDs !== pendingDs;
    // The kept late-join answer follows every change: the client's own bytes, as the update event would have given.
    if (changed) this.extendJoinAnswer(update);
    return changed;
  }

  /** The one `update` handler of every store's doc. */
  private static forward(this: void, update: Uint8Array, origin: unknown, doc: Y.Doc): void {
    if (!(doc instanceof StoreDoc)) return;
    const store = doc.editorStore;
    store.extendJoinAnswer(update);
    store.listener?.storeUpdated(store, update, origin);
  }

  /**
   * The frames answering a client's SyncStep1, in sending order: (from a kept answer) Update frames, then a
   * SyncStep2. A state vector that holds nothing of this doc (a new client) gets the whole state, encoded once and
   * then sent from the kept frames, to which every later change is added as an Update frame until the tail is too
   * long (keepsTail). The changes go before the state they follow: a provider counts itself synced at the SyncStep2,
   * so by then it must hold every change. Yjs keeps them pending until the state arrives and applies them with it.
   */
  syncAnswer(stateVector: Uint8Array): readonly Uint8Array[] {
    const fresh = coversNothing(this.doc, stateVector);
    const first = this.firstAnswer;
    if (first !== undefined && fresh) {
      this.firstAnswer = undefined;
      return [first];
    }
    if (this.joinAnswer !== undefined && fresh) {
      this.joinFrames.touch(this);
      return this.joinAnswer;
    }
    if (this.joinFrames.budgetBytes === 0 || !fresh) return [encodeSyncStep2(this.doc, stateVector)];
    const frame = encodeSyncStep2(this.doc);
    if (this.joinFrames.admits(frame.length)) {
      this.joinFrames.add(this, frame.length);
      this.joinAnswer = [frame];
      this.joinBytes = frame.length;
    }
    return [frame];
  }

  /**
   * A store opened from disk is usually opened for a joiner: its snapshot and merged log tail, just read, are
   * already the whole state, so the answer is built from them (two copies) instead of encoding the doc again.
   */
  private seedJoinAnswer(snapshot: Uint8Array, tail: Uint8Array | undefined): void {
    if (this.joinFrames.budgetBytes === 0) return;
    const frame = writeSyncStep2(snapshot);
    const update = tail === undefined ? undefined : writeUpdate(tail);
    if (!this.joinFrames.admits(frame.length) || (update !== undefined && !keepsTail(frame.length, 2, update.length))) return;
    this.joinAnswer = update === undefined ? [frame] : [update, frame];
    this.joinBytes = frame.length + (update?.length ?? 0);
    this.joinFrames.add(this, this.joinBytes);
  }

  /**
   * A small store just read from disk: its state, snapshot and tail, is already in bytes, and a store is mostly opened
   * for a joiner, so the first answer joins them (appendRun: a walk and a copy) instead of encoding the doc again. Only
   * a tail of at most one run (src/sync/update-concat.ts) and within JOIN_FRAME_MIN_BYTES: a larger store's answer is
   * kept (seedJoinAnswer), and with JOIN_STATE_CACHE_BYTES=0 every answer is encoded.
   */
  private seedFirstAnswer(snapshot: Uint8Array, runs: readonly Uint8Array[]): void {
    if (this.joinFrames.budgetBytes === 0 || runs.length > 1) return;
    const [run] = runs;
    const state = run === undefined ? snapshot : appendRun(snapshot, run);
    if (state === undefined || state.length >= JOIN_FRAME_MIN_BYTES) return;
    this.firstAnswer = writeSyncStep2(state);
  }

  /** A change: appended to the kept answer while the tail stays short, else the answer is dropped. */
  private extendJoinAnswer(update: Uint8Array): void {
    this.firstAnswer = undefined;
    const answer = this.joinAnswer;
    if (answer === undefined) return;
    const frame = writeUpdate(update);
    const base = answer.at(-1)?.length ?? 0;
    if (!keepsTail(base, answer.length, this.joinBytes - base + frame.length)) {
      this.dropJoinFrame();
      return;
    }
    // After the changes already kept, before the state (the last frame).
    answer.splice(answer.length - 1, 0, frame);
    this.joinBytes += frame.length;
    this.joinFrames.add(this, this.joinBytes);
  }

  /** @internal For the budget (JoinFrameHolder): it has already counted the bytes off. */
  evictJoinFrame(): void {
    this.joinAnswer = undefined;
    this.joinBytes = 0;
  }

  /** The doc is being destroyed or its tail grew too long: the kept answer goes, and its bytes leave the budget. */
  dropJoinFrame(): void {
    this.firstAnswer = undefined;
    if (this.joinAnswer === undefined) return;
    this.evictJoinFrame();
    this.joinFrames.remove(this);
  }

  /** For the update log (LogStream). */
  writeFailed(error: unknown): void {
    this.listener?.storeWriteFailed(this, error);
  }

  /**
   * The pub/sub topic of this store's connections (UpdateStream). Kept while the store has connections, since every
   * turn's updates and every awareness frame published for them name it (building it is a JSON.stringify, ~0.25 µs);
   * a store without connections (a REST write, a document loaded for a listing) builds it when used and keeps none.
   */
  topic(): string {
    if (this.peers.size === 0) {
      this.topicName = undefined;
      return topics.store(this.key, this.editorId);
    }
    return (this.topicName ??= topics.store(this.key, this.editorId));
  }

  /** Built when the log needs it (at a commit), not kept: a loaded store holds no array for it. */
  get id(): StoreId {
    return [this.key.apiKey, this.key.organizationId, this.key.documentId, this.editorId];
  }

  /** Stamps a change; the meta is written with the log entry's transaction. */
  touch(origin: ChangeOrigin, now: number): void {
    this.exists = true;
    this.lastUpdate = now;
    this.lastUpdatedBy = origin.userId;
    this.sessionId = origin.sessionId;
  }

  meta(): StoreMeta {
    return {
      type: this.type,
      contentKey: this.contentKey,
      lastUpdate: this.lastUpdate,
      lastUpdatedBy: this.lastUpdatedBy,
      sessionId: this.sessionId,
      foldedSeq: this.foldedSeq,
    };
  }

  snapshot(): Uint8Array {
    // The log calls this when it folds: remember the boundary for the meta of later commits.
    this.foldedSeq = this.nextSeq;
    return Y.encodeStateAsUpdate(this.doc);
  }

  record(): CrdtRecord {
    return {
      data: readData(this.doc, this.type, this.contentKey),
      id: this.editorId,
      lastUpdate: new Date(this.lastUpdate).toISOString(),
      lastUpdatedBy: this.lastUpdatedBy,
      sessionId: this.sessionId,
    };
  }
}

/** Yjs's own test of whether a transaction has content for an update (writeUpdateMessageFromTransaction). */
function changedIn(transaction: Y.Transaction): boolean {
  if (transaction.deleteSet.clients.size > 0) return true;
  for (const [client, clock] of transaction.afterState) if (transaction.beforeState.get(client) !== clock) return true;
  return false;
}
