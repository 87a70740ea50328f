// Owns one document's live state: a Y.Doc per editor id, the document's awareness, its connections and its mailbox.
import * as Y from 'yjs';
import { CLOSE } from '../errors.js';
import { limitRefusals } from '../metrics/instruments.js';
import { EXTENSION_TYPE_MIN, messageType, writeReadOnly, writeSyncStep1, type ClientMessage } from '../sync/protocol.js';
import type { AwarenessRefusal } from './awareness-guard.js';
import { DocumentAwareness, type AwarenessOwner } from './document-awareness.js';
import { defineRoot } from './crdt.js';
import type { StoreWrite } from './crdt-write.js';
import type { LoadedStore, StoreType } from '../store/snapshots.js';
import { EditorDoc, LOADING, type CrdtRecord, type EditorDocUpdates } from './editor-doc.js';
import { EditorDocs } from './editor-docs.js';
import { handleClientFrame, type FrameTarget } from './client-frames.js';
import { connectionTopics, topics, UpdateFanout, type FanoutTarget } from './fanout.js';
import { Mailbox, type TaskFailures } from './mailbox.js';
import { StoreWrites, type WritableStores } from './store-writes.js';
import { REST_ORIGIN, type ChangeOrigin, type DocumentActorView, type Peer, type PeerInfo } from './peer.js';
import type { DocumentKey } from '../document-key.js';
import type { ActorDeps } from './actor-deps.js';

export interface RootHint {
  readonly type?: StoreType;
  readonly contentKey?: string;
}

export class DocumentActor implements DocumentActorView, TaskFailures, EditorDocUpdates, FanoutTarget, AwarenessOwner, FrameTarget {
  /** Each store's `peers` are its connections; together they are the document's (no Set of its own for them). */
  private readonly stores = new EditorDocs();
  /** Connections attached, over all stores. */
  private peerCount = 0;
  // The optional structures below (livePeers, awareness, fanoutState) are made on first use: most
  // loaded documents never need some of them, and each empty Map or Set costs ~150-200 bytes per document. Topic
  // names are not kept either: they are built when used (src/doc/fanout.ts), a string or two per document less.
  /** The `ext=1` connections: the subscribers of the live topic. */
  private livePeers: Set<Peer> | undefined;
  private readonly mailbox: Mailbox;
  /** Created when a client first speaks awareness: most idle documents never need one. */
  private awareness: DocumentAwareness | undefined;
  /** Read through `fanout`, which makes it. */
  private fanoutState: UpdateFanout | undefined;
  private attaching = 0;
  /** Bytes published since every socket's buffer was last checked. */
  private uncheckedBytes = 0;
  /** The REST CRDT operations (src/doc/store-writes.ts), made at the first. */
  private writesState: StoreWrites | undefined;
  /** Leases from the registry (each open socket holds one, each REST or collab use one); never unloaded while > 0. */
  leases = 0;

  constructor(readonly key: DocumentKey, loaded: readonly LoadedStore[], private readonly deps: ActorDeps) {
    this.mailbox = new Mailbox(deps.mailboxCapacity, this);
    for (const record of loaded) this.addStore(record.editorId, record);
  }

  /** @internal For the mailbox: a fire-and-forget task failed. */
  taskFailed(error: unknown): void {
    this.deps.log.error('document task failed', { error, ...this.logFields() });
  }

  /** Every attached connection, store by store. */
  private *peers(): IterableIterator<Peer> {
    for (const store of this.stores.values()) yield* store.peers;
  }

  /** `origin` is a connection attached to this document (updates and awareness changes carry their sender). */
  private isAttached(origin: unknown): origin is Peer {
    if (typeof origin !== 'object' || origin === null) return false;
    return this.stores.get((origin as Peer).editorId)?.peers.has(origin as Peer) === true;
  }

  private logFields(): { organizationId: string; documentId: string } {
    return { organizationId: this.key.organizationId, documentId: this.key.documentId };
  }

  private get fanout(): UpdateFanout {
    return (this.fanoutState ??= new UpdateFanout(this));
  }

  /** @internal For the client frames (FrameTarget). */
  get documentAwareness(): DocumentAwareness {
    return (this.awareness ??= new DocumentAwareness(this.deps.awareness, this));
  }

  // ---- connections (called by the WebSocket edge) ----

  /** Connections attached or queued to attach (the mailbox may be busy with a long task when they arrive). */
  get connectionCount(): number {
    return this.peerCount + this.attaching;
  }

  /** Tasks waiting in the mailbox (for the metrics scrape). */
  get queued(): number {
    return this.mailbox.size;
  }

  /** Admits a connection: sends SyncStep1, the awareness states and, for viewers, the read-only notice. */
  attach(peer: Peer, hint: RootHint = {}): void {
    this.attaching++;
    this.mailbox.tell(() => {
      this.attaching--;
      if (this.peerCount >= this.deps.maxConnections) {
        peer.close(CLOSE.DOCUMENT_FULL, 'the document has reached its connection limit');
        return;
      }
      const store = this.stores.get(peer.editorId) ?? this.addStore(peer.editorId);
      if (hint.type !== undefined && store.type === null) {
        const contentKey = hint.contentKey ?? store.contentKey;
        if (defineRoot(store.doc, hint.type, contentKey)) {
          store.type = hint.type;
          store.contentKey = contentKey;
        }
      }
      // Subscribed in the mailbox, so the connection hears every update applied after its SyncStep1's state vector
      // (and, harmlessly, the not yet published updates of this turn, which that state vector already covers).
      store.peers.add(peer);
      this.peerCount++;
      for (const topic of connectionTopics(this.key, store.editorId, peer.extensions)) peer.subscribe(topic);
      if (peer.extensions) (this.livePeers ??= new Set()).add(peer);
      peer.send(writeSyncStep1(Y.encodeStateVector(store.doc)));
      const states = this.awareness?.statesFrame();
      if (states !== undefined) peer.send(states);
      if (peer.readOnly) peer.send(writeReadOnly('viewer access: this connection is read-only'));
      this.notify('joined', peer);
    }, true);
  }

  /** Forgets a closed connection and removes the awareness states it announced. */
  detach(peer: Peer): void {
    this.mailbox.tell(() => {
      const store = this.stores.get(peer.editorId);
      if (store === undefined || !store.peers.delete(peer)) return;
      this.peerCount--;
      this.livePeers?.delete(peer);
      if (!store.exists && store.peers.size === 0) this.stores.delete(peer.editorId);
      this.awareness?.release(peer);
      this.notify('left', peer);
      this.checkIdle();
    }, true);
  }

  /**
   * Queues a validated client frame (src/doc/client-frames.ts); false when the mailbox is full or the document's API
   * key has spent its share of the event loop (API_KEY_SYNC_CPU_MS_PER_SECOND): the edge then sheds that connection.
   */
  receive(peer: Peer, message: ClientMessage): boolean {
    const cpu = this.deps.syncCpu;
    if (cpu === undefined) return this.mailbox.tell(() => handleClientFrame(this, peer, message));
    if (cpu.refuses(this.key.apiKey)) return false;
    return this.mailbox.tell(() => cpu.timed(this.key.apiKey, handleClientFrame, this, peer, message));
  }

  /** @internal For the client frames (FrameTarget). */
  attachedStore(peer: Peer): EditorDoc | undefined {
    const store = this.stores.get(peer.editorId);
    return store?.peers.has(peer) === true ? store : undefined;
  }

  /** @internal For the client frames (FrameTarget): a client's update applied as is. */
  clientChanged(store: EditorDoc, update: Uint8Array, peer: Peer, frame?: Uint8Array): void {
    // The frame found `peer` attached (attachedStore) in this same task: no need to look again.
    this.changed(store, update, peer, peer, frame);
  }

  /** @internal For the actor's stores (EditorDocUpdates): a change to one of its docs. */
  storeUpdated(store: EditorDoc, update: Uint8Array, origin: unknown): void {
    if (origin === LOADING) return;
    this.changed(store, update, isChangeOrigin(origin) ? origin : REST_ORIGIN, this.isAttached(origin) ? origin : undefined);
  }

  /**
   * Stamps, logs and queues for the store's other connections one change of `origin`; `sender`: the attached connection
   * it came from (it does not get it back), `frame`: the client's frame holding it.
   */
  private changed(store: EditorDoc, update: Uint8Array, origin: ChangeOrigin, sender: Peer | undefined, frame?: Uint8Array): void {
    store.touch(origin, Date.now());
    this.deps.crdtEvents?.changed(this.key, store);
    const commit = this.deps.updateLog.append(store, update);
    this.writesState?.logged(commit);
    // Peers get the update at the end of this turn, before the disk: a crash loses at most what clients still hold
    // and resend. Updates of one sender in one turn go out as one merged frame, not back to that sender.
    this.fanout.queue(store, update, sender, frame);
  }

  /** @internal For the document's awareness (AwarenessOwner): a change's frame. */
  awarenessChanged(frame: Uint8Array): void {
    // Echoed to the sender too: y-websocket drops a connection that hears nothing for 30 s, and a lone
    // client's own awareness renewals are what it hears. Queued updates go first: cursors refer to them.
    this.fanoutState?.flush();
    this.publishToAll(frame);
  }

  /** @internal For the document's awareness (AwarenessOwner): one frame to every connection, the sender's included. */
  awarenessFanoutFits(bytes: number): boolean {
    const budget = this.deps.awarenessFanout;
    if (budget === undefined || budget.charge(this.key.apiKey, bytes * Math.max(1, this.connectionCount)) === 0) return true;
    limitRefusals.api_key_awareness_bytes++;
    return false;
  }

  /** @internal For the document's awareness (AwarenessOwner). */
  awarenessRefused(peer: Peer, why: AwarenessRefusal): void {
    this.deps.log.debug('awareness entry dropped', { why, sessionId: peer.sessionId, ...this.logFields() });
  }

  /** @internal For the fan-out (FanoutTarget) and the actor's own frames: publishes, then checks the buffers when due. */
  publish(topic: string, bytes: Uint8Array): void {
    this.deps.publisher.publish(topic, bytes);
    this.checkBackpressure(bytes.length);
  }

  /** A document-wide frame: every connection is subscribed to exactly one store's topic, so once to each such topic. */
  private publishToAll(bytes: Uint8Array): void {
    for (const store of this.stores.values()) if (store.peers.size > 0) this.publish(store.topic(), bytes);
  }

  /**
   * @internal For the fan-out: `sender` already published `bytes` through its own socket; the publisher passes it on
   * where that socket does not reach (a cluster's relaying nodes). Without this the fan-out would skip the cluster.
   */
  publishedBy(topic: string, bytes: Uint8Array, sender: Peer): void {
    this.deps.publisher.publishedBy?.(topic, bytes, sender);
  }

  /**
   * @internal Closes every connection past its backpressure limit with 1013 (uWS itself would cut it without a close
   * frame), once `published` bytes add up to the check interval since the last look.
   */
  checkBackpressure(published: number): void {
    this.uncheckedBytes += published;
    if (this.uncheckedBytes < this.deps.backpressureCheckBytes) return;
    this.uncheckedBytes = 0;
    for (const peer of this.peers()) peer.checkBackpressure();
  }

  /** @internal For the fan-out: a scheduled flush failed. */
  fanoutFailed(error: unknown): void {
    this.taskFailed(error);
  }

  private addStore(editorId: string, loaded?: LoadedStore): EditorDoc {
    const store = new EditorDoc(this.key, editorId, loaded, this.deps.joinFrames);
    store.listen(this);
    this.stores.add(store);
    return store;
  }

  // ---- generic API for other features (comments, presence) ----

  /** Runs `task` inside the mailbox, after everything queued before it; the result (awaited if a promise) is returned. */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    return this.mailbox.ask(task);
  }

  /**
   * Sends one frame to every connection of the document. Extension frames (type >= 100) go only to connections
   * that asked for them with `?ext=1`. Returns how many connections it was queued for.
   */
  broadcast(bytes: Uint8Array): number {
    // Queued updates go first, so a frame about a change never overtakes the change.
    this.fanoutState?.flush();
    if ((messageType(bytes) ?? 0) >= EXTENSION_TYPE_MIN) {
      const members = this.livePeers?.size ?? 0;
      if (members > 0) this.publish(topics.live(this.key), bytes);
      return members;
    }
    this.publishToAll(bytes);
    return this.peerCount;
  }

  /** Sends one frame to one connection; false when it is not connected here. */
  sendTo(sessionId: string, bytes: Uint8Array): boolean {
    this.fanoutState?.flush();
    for (const peer of this.peers()) if (peer.sessionId === sessionId) return peer.send(bytes);
    return false;
  }

  connections(): PeerInfo[] {
    return [...this.peers()].map(info);
  }

  private notify(event: 'joined' | 'left', peer: Peer): void {
    for (const listener of this.deps.listeners) {
      try {
        listener[event](info(peer), this);
      } catch (error) {
        // A listener's failure is its own; the connection and the document carry on.
        this.deps.log.error(`connection listener failed on ${event}`, { error, ...this.logFields() });
      }
    }
  }

  // ---- REST CRDT operations ----

  records(editorId?: string): Promise<CrdtRecord[]> {
    return this.writes.records(editorId);
  }

  /** Creates a store's content (ALREADY_EXISTS when it has some); resolves once committed. */
  add(editorId: string, write: StoreWrite): Promise<void> {
    return this.writes.add(editorId, write);
  }

  /** Replaces a store's content with real Yjs operations (NOT_FOUND when absent); resolves once committed. */
  update(editorId: string, write: StoreWrite): Promise<void> {
    return this.writes.update(editorId, write);
  }

  private get writes(): StoreWrites {
    if (this.writesState !== undefined) return this.writesState;
    const stores: WritableStores = {
      ask: (task) => this.mailbox.ask(task),
      get: (editorId) => this.stores.get(editorId),
      create: (editorId) => this.addStore(editorId),
      all: () => this.stores.values(),
      fits: (added) => this.fits(added),
    };
    return (this.writesState = new StoreWrites(stores, this.deps.updateLog));
  }

  /**
   * @internal For the actor's stores: a store's writes failed on their own and will not be retried (src/store/update-log.ts).
   * Memory goes back to what is on disk, and the store's connections, which hold the refused change, are closed.
   */
  storeWriteFailed(failed: EditorDoc, error: unknown): void {
    this.deps.log.error('a store could not be written; it is reloaded from disk', { error, editorId: failed.editorId, ...this.logFields() });
    this.mailbox.tell(() => {
      if (this.stores.get(failed.editorId) !== failed) return;
      const loaded = this.deps.updateLog.snapshots.load(this.key.apiKey, this.key.organizationId, this.key.documentId).find((record) => record.editorId === failed.editorId);
      const restored = new EditorDoc(this.key, failed.editorId, loaded, this.deps.joinFrames);
      for (const peer of failed.peers) restored.peers.add(peer);
      this.stores.delete(failed.editorId);
      this.stores.add(restored);
      restored.listen(this);
      failed.doc.destroy();
      // Their detach finds them in the restored store's peers.
      for (const peer of [...restored.peers]) peer.close(CLOSE.INTERNAL, 'a change could not be saved; reconnect to resync');
    }, true);
  }

  // ---- lifecycle (called by the registry) ----

  get idle(): boolean {
    return this.peerCount === 0 && this.leases === 0;
  }

  /** Bytes of its stores as stored (last snapshot plus the log since): the loaded-documents budget's estimate (src/doc/loaded-budget.ts). */
  get storedBytes(): number {
    return this.stores.storedBytes();
  }

  /** What its stores hold beyond that for the budget: a small store's one-time first answer after a load from disk. */
  get answerBytes(): number {
    return this.stores.answerBytes();
  }

  /**
   * Whether `added` more bytes keep the document within MAX_DOCUMENT_BYTES, counted as stored (snapshot plus the log
   * since): a loop over the document's stores (most have one), then a comparison, per edit.
   */
  fits(added: number): boolean {
    const max = this.deps.maxDocumentBytes;
    return max === 0 || this.storedBytes + added <= max;
  }

  checkIdle(): void {
    if (this.idle) this.deps.onIdle(this.key);
  }

  whenIdle(): Promise<void> {
    return this.mailbox.whenIdle();
  }

  /** Closes every connection (graceful stop); their detach runs through the mailbox. */
  closeAll(code: number, reason: string): void {
    for (const peer of [...this.peers()]) peer.close(code, reason);
  }

  /** Folds every store's log into a snapshot and resolves once committed (unload, shutdown). */
  async finalSnapshot(): Promise<void> {
    const pending = [...this.stores.values()].filter((store) => store.exists && (store.logCount > 0 || store.needsSnapshot));
    await Promise.all(pending.map((store) => this.deps.updateLog.requestSnapshot(store)));
  }

  /** `deleted`: the document is deleted, so its stores' pending crdt events are dropped rather than raised. */
  dispose(deleted = false): void {
    this.fanoutState?.cancel();
    this.awareness?.dispose();
    this.awareness = undefined;
    this.deps.crdtEvents?.[deleted ? 'deleted' : 'unloading'](this.stores.values());
    for (const store of this.stores.values()) store.doc.destroy();
    this.stores.clear();
  }
}

function info({ sessionId, userId, name, email, editorId, readOnly, extensions }: Peer): PeerInfo {
  return { sessionId, userId, name, email, editorId, readOnly, extensions };
}

function isChangeOrigin(value: unknown): value is ChangeOrigin {
  return typeof value === 'object' && value !== null && typeof (value as ChangeOrigin).userId === 'string';
}
