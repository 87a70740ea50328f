// Owns durable state in JetStream as one node sees it: the Replication port (publishing in state-publisher.ts, applying in state-applier.ts), catch-up, rebuilds from a checkpoint and the node-local cache's lifecycle.
import { randomUUID } from 'node:crypto';
import { StorageType, nanos, type JetStreamClient, type JetStreamManager, type NatsConnection, type ObjectStore, type Subscription } from 'nats';
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { ReplicatedOp, Replication } from '../store/replication.js';
import { CHECKPOINT_BUCKET } from './checkpoint.js';
import { APPLIED_SUBJECT, Compactor } from './compactor.js';
import { AppliedSeq } from './applied-seq.js';
import { DataDirLock } from './data-dir-lock.js';
import { Fencing } from './fence.js';
import { checkCache, markCache, rebuildIfBehind } from './rebuild.js';
import { POSITION_KEY, StateApplier } from './state-applier.js';
import { BLOB_BUCKET, STATE_STREAM, STATE_SUBJECT } from './state-message.js';
import { StatePublisher } from './state-publisher.js';

export { BLOB_BUCKET, STATE_STREAM, STATE_SUBJECT } from './state-message.js';

/** How often a node reads the stream's size (gauges) and the worker-role holder checks the compaction threshold. */
const MONITOR_MS = 5_000;
/** Attempts at a rebuild that a concurrent compaction keeps overtaking before the start gives up. */
const REBUILD_ATTEMPTS = 5;

export interface ClusterStateOptions {
  readonly nodeId: string;
  readonly log: Logger;
  /** Stream and object-store replicas (3 on a production NATS cluster; 1 in tests). */
  readonly replicas?: number;
  /** How long a write waits for the stream's acknowledgement before it answers UNAVAILABLE (it still lands later). */
  readonly publishTimeoutMs?: number;
  /** How long catch-up waits for the applier before it answers UNAVAILABLE. */
  readonly catchUpTimeoutMs?: number;
  /** CLUSTER_CHECKPOINT_BYTES: state-log growth that triggers a checkpoint on the worker-role holder (0: never). */
  readonly checkpointBytes?: number;
  /** Whether this node holds the worker role (compaction runs there only). */
  readonly holder?: () => boolean;
  /** Tests: runs between pieces of a checkpoint's upload. */
  readonly checkpointPaced?: () => Promise<void>;
  /** Whether this node still owns a document (its lease is valid): a fenced write acknowledged after that answers UNAVAILABLE. */
  readonly owns?: (document: string) => boolean;
}

/** The stream lost messages this cache has not applied (a compaction purged them): only a rebuild from a checkpoint helps. */
class BehindPurge extends Error {}

/**
 * The store's Replication port on JetStream (publishing: StatePublisher) and this node's applier: every node consumes
 * the stream in order into its LMDB cache. A cache behind the stream's first sequence (it was away across a
 * compaction) is rebuilt from the newest checkpoint, never applied with a gap.
 */
export class ClusterState implements Replication {
  readonly origin: string;
  private readonly js: JetStreamClient;
  private readonly publisher: StatePublisher;
  /** Highest stream sequence applied to (or, for own messages, seen by) the local cache. */
  private readonly applied: AppliedSeq;
  private store: Store | undefined;
  /** Made at attach, when the cache is known. */
  private applier: StateApplier | undefined;
  private lock: DataDirLock | undefined;
  private closed = false;
  /** Set when the applier met a gap after the start: this cache can no longer follow the stream until restarted. */
  private behind: BehindPurge | undefined;
  private responder: Subscription | undefined;
  private monitor: NodeJS.Timeout | undefined;
  /** Compaction (created at attach, when the data directory is known). */
  compactor: Compactor | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly blobs: ObjectStore,
    private readonly checkpoints: ObjectStore,
    private readonly streamCreated: string,
    private readonly options: ClusterStateOptions,
  ) {
    this.origin = `${options.nodeId}/${randomUUID().slice(0, 8)}`;
    this.js = nc.jetstream();
    this.fencing = new Fencing(options.log, options.owns);
    this.publisher = new StatePublisher(nc, blobs, {
      origin: this.origin,
      log: options.log,
      publishTimeoutMs: options.publishTimeoutMs ?? 5_000,
      lateAck: (fence) => this.fencing.acknowledgedLate(fence),
    });
    this.applied = new AppliedSeq(options.catchUpTimeoutMs ?? 30_000);
  }

  /** Binds (creating if needed) the stream, the object store of large messages and that of checkpoints. */
  static async open(nc: NatsConnection, options: ClusterStateOptions): Promise<ClusterState> {
    const jsm = await nc.jetstreamManager();
    const replicas = options.replicas ?? 1;
    let info;
    try {
      info = await jsm.streams.info(STATE_STREAM);
    } catch (error) {
      // Absent (or racing another node's creation): add is idempotent for the same configuration.
      options.log.debug('creating the state stream', { error: String(error) });
      info = await jsm.streams.add({ name: STATE_STREAM, subjects: [STATE_SUBJECT], storage: StorageType.File, num_replicas: replicas, duplicate_window: nanos(120_000) });
    }
    const blobs = await nc.jetstream().views.os(BLOB_BUCKET, { storage: StorageType.File, replicas });
    const checkpoints = await nc.jetstream().views.os(CHECKPOINT_BUCKET, { storage: StorageType.File, replicas });
    return new ClusterState(nc, jsm, blobs, checkpoints, info.created, options);
  }

  // ---- the Replication port ----

  refusal(): Error | undefined {
    if (this.behind !== undefined) return this.behindError();
    return this.publisher.refusal();
  }

  publish(ops: readonly ReplicatedOp[]): Promise<void> {
    return this.publisher.publish(ops, this.fencing.epochs.fenceOf(ops));
  }

  /** Resolves once every message published so far (resends included) is acknowledged by the stream. */
  acknowledged(): Promise<void> {
    return this.publisher.acknowledged();
  }

  // ---- the local cache and the applier ----

  /**
   * Takes the data directory for this node (refusing a second node on it), checks the cache (rebuilding a dirty one,
   * one of another stream, or one behind the stream's first sequence), marks it dirty until a clean close, and catches
   * up with the stream before returning.
   */
  async attach(store: Store): Promise<void> {
    this.lock = DataDirLock.take(store.path);
    const meta = store.records<unknown>(DB.meta);
    const log = this.options.log;
    try {
      await checkCache(store, this.streamCreated, POSITION_KEY, log);
    } catch (error) {
      this.lock.release();
      throw error;
    }
    // From here on the cache is this node's: close() may mark it clean.
    this.store = store;
    this.applied.value = (meta.get(POSITION_KEY) as number | undefined) ?? 0;
    markCache(store, this.streamCreated, true);
    this.compactor = new Compactor(this.nc, this.jsm, this.blobs, this.checkpoints, {
      log,
      dataDir: store.path,
      stream: this.streamCreated,
      thresholdBytes: this.options.checkpointBytes ?? 0,
      holder: this.options.holder ?? (() => false),
      ...(this.options.checkpointPaced === undefined ? {} : { paced: this.options.checkpointPaced }),
    });
    const applier = new StateApplier({
      js: this.js,
      blobs: this.blobs,
      origin: this.origin,
      store,
      publisher: this.publisher,
      fencing: this.fencing,
      applied: this.applied,
      log,
      closed: () => this.closed,
      behind: () => this.behind !== undefined,
      fallBehind: (applied, next) => this.fallBehind(applied, next),
    });
    this.applier = applier;
    const from = this.applied.value;
    for (let attempt = 1; ; attempt++) {
      await this.rebuildIfBehind(store, applier);
      this.respond();
      applier.start();
      try {
        await this.catchUp();
        break;
      } catch (error) {
        // A compaction purged past this cache while it loaded: stop the applier and load the newer checkpoint.
        if (this.behind === undefined || attempt >= REBUILD_ATTEMPTS) throw error;
        log.warn('a compaction overtook this rebuild; starting over from the newest checkpoint', { attempt });
        await applier.stop();
        this.behind = undefined;
      }
    }
    this.monitor = setInterval(() => void this.compactor?.tick(), MONITOR_MS);
    this.monitor.unref();
    void this.compactor.tick();
    log.info('state caught up with the cluster log', { from, applied: this.applied.value });
  }

  /** A cache behind the stream's first sequence is emptied and loaded from the newest checkpoint (src/cluster/rebuild.ts). */
  private async rebuildIfBehind(store: Store, applier: StateApplier): Promise<void> {
    this.applied.value = await rebuildIfBehind({ jsm: this.jsm, checkpoints: this.checkpoints, stream: this.streamCreated, log: this.options.log, store, applied: this.applied.value, positionKey: POSITION_KEY, attempts: REBUILD_ATTEMPTS });
    // The fold's own state (the newest claim per document, open per-origin gaps), as stored with the position or loaded with a checkpoint.
    const meta = store.records<unknown>(DB.meta);
    this.fencing.claims.load(meta);
    applier.restore(meta);
  }

  /** Answers the compactor's question of how far this cache has applied (the purge never passes it). */
  private respond(): void {
    this.responder ??= this.nc.subscribe(APPLIED_SUBJECT, {
      callback: (error, msg) => {
        if (error !== null) return this.options.log.warn('applied-position subscription failed', { error: String(error) });
        if (this.behind === undefined) msg.respond(new TextEncoder().encode(JSON.stringify({ node: this.options.nodeId, applied: this.applied.value })));
      },
    });
  }

  /** Resolves once the local cache holds every message the stream had when called; UNAVAILABLE when it cannot. */
  async catchUp(): Promise<void> {
    if (this.behind !== undefined) throw this.behindError();
    let state: { first_seq: number; last_seq: number };
    try {
      state = (await this.jsm.streams.info(STATE_STREAM)).state;
    } catch (error) {
      this.options.log.warn('cannot read the cluster log position', { error: String(error) });
      throw unavailable('the cluster log (NATS JetStream) is unreachable; retry shortly');
    }
    if (this.applied.value < state.first_seq - 1) {
      this.fallBehind(this.applied.value, state.first_seq);
      throw this.behindError();
    }
    await this.reach(state.last_seq);
  }

  /** Resolves once the applier has passed stream sequence `seq`; UNAVAILABLE after the catch-up timeout or behind a purge. */
  private async reach(seq: number): Promise<void> {
    if (this.behind !== undefined) throw this.behindError();
    await this.applied.reach(seq);
  }

  private behindError(): Error {
    return unavailable('this node fell behind a compaction of the cluster log and must be restarted to rebuild its cache');
  }

  /** `catchUp` after a lookup missed: true once caught up (worth one more look), false when it could not; never throws. */
  async catchUpFound(): Promise<boolean> {
    try {
      await this.catchUp();
    } catch (error) {
      this.options.log.debug('catch-up after a miss failed', { error: String(error) });
      return false;
    }
    return true;
  }

  /** For the metrics: positions, writes waiting for their acknowledgement, whether writes are refused, the last checkpoint. */
  stats(): { applied: number; unacknowledged: number; refusing: boolean; lag: number; diverged: number; first: number; last: number; logBytes: number; checkpointSeq: number; checkpointBytes: number; checkpointSeconds: number; sweptObjects: number; sweptBytes: number } {
    const stream = this.compactor?.stream ?? { first: 0, last: 0, bytes: 0 };
    const checkpoint = this.compactor?.last;
    return {
      applied: this.applied.value,
      unacknowledged: this.publisher.unacknowledged,
      refusing: this.refusal() !== undefined,
      lag: Math.max(0, (this.applier?.streamLast ?? 0) - this.applied.value),
      diverged: this.fencing.divergedCount,
      first: stream.first,
      last: Math.max(stream.last, this.applied.value),
      logBytes: stream.bytes,
      checkpointSeq: checkpoint?.seq ?? 0,
      checkpointBytes: checkpoint?.bytes ?? 0,
      checkpointSeconds: (checkpoint?.durationMs ?? 0) / 1000,
      sweptObjects: this.compactor?.swept.objects ?? 0,
      sweptBytes: this.compactor?.swept.bytes ?? 0,
    };
  }

  /** The stream position applied so far (for logs and tests). */
  get position(): number {
    return this.applied.value;
  }

  /** The next message is past a purge this cache never reached: stop applying (a gap would lose writes) and say why. */
  private fallBehind(applied: number, next: number): void {
    if (this.behind !== undefined) return;
    this.behind = new BehindPurge(`the cluster log continues at ${next} but this cache applied up to ${applied}`);
    this.options.log.error('this node\'s cache fell behind a compaction of the cluster log: writes and catch-ups answer UNAVAILABLE until it is restarted (the restart rebuilds it from the newest checkpoint)', { applied, next });
    this.applied.failAll(this.behindError());
  }

  // ---- fencing document writes with the owner's epoch (src/cluster/fence.ts) ----

  private readonly fencing: Fencing;

  /**
   * After taking `document`'s lease (revision `revision`): publishes a claim and waits until the applier has passed it.
   * The claim's stream sequence is the document's new epoch (docs/cluster.md, "Fencing document writes"); every write
   * the previous owner got into the stream is before it. The same holding of the lease keeps its epoch and catches up.
   */
  async claimDocument(document: string, revision: number): Promise<void> {
    const refusal = this.fencing.refusal(document) ?? this.refusal();
    if (refusal !== undefined) throw refusal;
    if (this.fencing.holding(document, revision)) return this.catchUp();
    const seq = await this.publisher.claim(document, revision, (n) => this.fencing.claiming(n));
    this.fencing.epochs.hold(document, seq, revision);
    await this.reach(seq);
  }

  /** The document was released after its last write: later writes of it here are not fenced. */
  releaseDocument(document: string): void {
    this.fencing.epochs.forget(document);
  }

  /**
   * After the store's last write: waits (bounded) for unacknowledged messages, stops the applier and compaction, and
   * marks the cache clean only when every local write is in the stream (else the next start rebuilds it).
   */
  async close(): Promise<void> {
    const store = this.store;
    if (store !== undefined) await store.group.settled();
    if (this.monitor !== undefined) clearInterval(this.monitor);
    const unacked = await this.publisher.close();
    this.closed = true;
    this.responder?.unsubscribe();
    // Bounded: with NATS away the consumer's close would wait for the server.
    await Promise.race([Promise.all([this.applier?.stop(), this.compactor?.close()]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    if (store !== undefined && this.behind === undefined) {
      const meta = store.records<unknown>(DB.meta);
      if (unacked === 0 && this.fencing.divergedCount === 0) {
        // DB.meta is node-local (never recorded), and writes through the store are refused once closed.
        meta.putSync(POSITION_KEY, this.applied.value);
        markCache(store, this.streamCreated, false);
      } else this.options.log.warn('stopping with writes the cluster log never acknowledged (or fenced off): the cache stays dirty and is rebuilt at the next start', { unacked, diverged: this.fencing.divergedCount });
    }
    this.lock?.release();
  }
}
