// Owns durable state in JetStream: the replicated write log (publish with acknowledgement), the applier, catch-up and the node-local cache's lifecycle.
import { randomUUID } from 'node:crypto';
import { pack, unpack } from 'msgpackr';
import { DeliverPolicy, StorageType, nanos, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg, type NatsConnection, type ObjectStore } from 'nats';
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { CLUSTER_CACHE_KEY, type ReplicatedOp, type Replication } from '../store/replication.js';
import { DataDirLock } from './data-dir-lock.js';
import { ClaimTable, Fencing, type Fence } from './fence.js';
import { OriginOrder } from './origin-order.js';

export const STATE_STREAM = 'PLAIT_STATE';
export const STATE_SUBJECT = 'plait.state.tx';
export const BLOB_BUCKET = 'plait_blobs';
/** DB.meta keys (node-local): where the applier is, and whether the cache may hold writes the stream lacks. */
const POSITION_KEY = 'clusterApplied';
const CACHE_KEY = CLUSTER_CACHE_KEY;
/** DB.meta key (node-local): the applier's open per-origin gaps (src/cluster/origin-order.ts), stored with the position. */
const GAPS_KEY = 'clusterGaps';

/** A message on the stream: its origin (node and boot), the origin's counter, and the ops or the blob holding them. */
interface TxMessage {
  readonly o: string;
  readonly n: number;
  readonly ops?: readonly ReplicatedOp[];
  readonly b?: string;
  /** A claim: the owner of this document (key string) starts a new epoch at this message's stream sequence. */
  readonly c?: string;
  /** With `c`: the lease revision the claim was made under (an older holding's claim is ignored). */
  readonly r?: number;
  /** The epochs the writer held for the documents whose rows `ops` write (src/cluster/fence.ts). */
  readonly f?: Fence;
}

interface CacheState {
  /** The stream's creation time: a cache built from another stream (NATS store wiped) is rebuilt. */
  readonly stream: string;
  readonly dirty: boolean;
}

export interface ClusterStateOptions {
  readonly nodeId: string;
  readonly log: Logger;
  /** Stream and object-store replicas (3 on a production NATS cluster; 1 in tests). */
  readonly replicas?: number;
  /** How long a write waits for the stream's acknowledgement before it answers UNAVAILABLE (it still lands later). */
  readonly publishTimeoutMs?: number;
  /** How long catch-up waits for the applier before it answers UNAVAILABLE. */
  readonly catchUpTimeoutMs?: number;
  /** Whether this node still owns a document (its lease is valid): a fenced write acknowledged after that answers UNAVAILABLE. */
  readonly owns?: (document: string) => boolean;
}

/** Foreign messages read but not applied yet. */
interface Batch {
  ops: ReplicatedOp[];
  messages: number;
  /** The last stream sequence taken into the batch (or passed). */
  end: number;
  /** DB.meta entries stored with the position (claims applied). */
  meta: Array<{ key: string; value: unknown }>;
  /** Ops that win over this node's own pending writes (a newer owner's writes of a document this node lost). */
  forced: Set<ReplicatedOp>;
}

/** A write waiting for the stream's acknowledgement. */
interface Outbound {
  readonly n: number;
  readonly ops: readonly ReplicatedOp[];
  readonly payload: Uint8Array;
  readonly fence?: Fence;
  told: boolean;
  acked: boolean;
  readonly resolve: (seq: number) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * The store's Replication port on JetStream. Every committed transaction is one message on `plait.state.tx` (the
 * whole message in the object store when it exceeds the inline limit), published in commit order with a message id
 * (origin + counter: a resend inside the stream's duplicate window is dropped by the server). A write resolves once
 * acknowledged; one not acknowledged in time answers UNAVAILABLE and is resent in order until it lands, so every
 * node's cache ends in the stream's order. The applier consumes the stream in order into the local LMDB.
 */
export class ClusterState implements Replication {
  readonly origin: string;
  private readonly js: JetStreamClient;
  private counter = 0;
  private readonly queue: Outbound[] = [];
  private retrying: Promise<void> | undefined;
  private resendFailures = 0;
  /** Highest stream sequence applied to (or, for own messages, seen by) the local cache. */
  private applied = 0;
  /** The highest stream sequence the applier has heard of (a delivered message's sequence plus those pending after it). */
  private streamLast = 0;
  private readonly waiters = new Set<{ seq: number; wake: () => void }>();
  private store: Store | undefined;
  private messages: ConsumerMessages | undefined;
  private applying: Promise<void> | undefined;
  private lock: DataDirLock | undefined;
  private closed = false;
  private readonly inlineLimit: number;
  private readonly publishTimeoutMs: number;
  private readonly catchUpTimeoutMs: number;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly blobs: ObjectStore,
    private readonly streamCreated: string,
    private readonly options: ClusterStateOptions,
  ) {
    this.origin = `${options.nodeId}/${randomUUID().slice(0, 8)}`;
    this.js = nc.jetstream();
    // Headroom under the server's max_payload for the envelope and headers.
    this.inlineLimit = Math.max(1024, Math.min(nc.info?.max_payload ?? 1024 * 1024, 1024 * 1024) - 16 * 1024);
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
    this.catchUpTimeoutMs = options.catchUpTimeoutMs ?? 30_000;
    this.fencing = new Fencing(options.log, options.owns);
  }

  /** Binds (creating if needed) the stream and the object store of large messages. */
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
    return new ClusterState(nc, jsm, blobs, info.created, options);
  }

  // ---- publishing (the Replication port) ----

  /** While earlier writes wait to be resent (the stream unreachable), new ones are refused before they commit. */
  refusal(): Error | undefined {
    if (this.closed) return unavailable('the node is stopping');
    if (this.retrying !== undefined) return unavailable('the cluster log (NATS JetStream) is unreachable; earlier writes wait to be resent; retry shortly');
    return undefined;
  }

  publish(ops: readonly ReplicatedOp[]): Promise<void> {
    if (this.closed) return Promise.reject(unavailable('the node is stopping'));
    const fence = this.fencing.epochs.fenceOf(ops);
    const n = ++this.counter;
    this.sent.set(n, ops);
    return this.enqueue(n, ops, pack({ o: this.origin, n, ops, ...(fence === undefined ? {} : { f: fence }) } satisfies TxMessage), fence).then(() => undefined);
  }

  /** Queues one message (in call order) and resolves with its stream sequence once acknowledged. */
  private enqueue(n: number, ops: readonly ReplicatedOp[], payload: Uint8Array, fence: Fence | undefined): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const entry: Outbound = {
        n,
        ops,
        payload,
        ...(fence === undefined ? {} : { fence }),
        told: false,
        acked: false,
        resolve,
        reject,
        timer: setTimeout(() => this.tell(entry, unavailable('the cluster log (NATS JetStream) did not acknowledge the write in time; it was not acknowledged, retry')), this.publishTimeoutMs),
      };
      this.queue.push(entry);
      // While resending after a failure, everything goes through the resend loop, in order.
      if (this.retrying === undefined) this.transmit(entry).then((seq) => this.acked(entry, seq), (error: unknown) => this.failed(entry, error));
    });
  }

  /**
   * Sends one message and resolves on the stream's acknowledgement. Sends are issued in call order: a large
   * message's blob upload holds back the messages after it (js.publish sends synchronously when called), while
   * acknowledgements are awaited in parallel.
   */
  private transmit(entry: Outbound): Promise<number> {
    const msgID = `${this.origin}#${entry.n}`;
    let acknowledged: Promise<{ seq: number }> = Promise.resolve({ seq: 0 });
    const issued = this.sending.then(async () => {
      let data = entry.payload;
      if (data.length > this.inlineLimit) {
        await this.blobs.putBlob({ name: msgID }, data);
        data = pack({ o: this.origin, n: entry.n, b: msgID, ...(entry.fence === undefined ? {} : { f: entry.fence }) } satisfies TxMessage);
      }
      acknowledged = this.js.publish(STATE_SUBJECT, data, { msgID, timeout: this.publishTimeoutMs });
    });
    this.sending = issued.catch((error: unknown) => this.options.log.debug('state send failed', { error: String(error) }));
    return issued.then(() => acknowledged).then((ack) => ack.seq);
  }

  /** The last send issued (not its acknowledgement): the next send waits for it, so the stream gets commit order. */
  private sending: Promise<unknown> = Promise.resolve();

  private acked(entry: Outbound, seq: number): void {
    entry.acked = true;
    const at = this.queue.indexOf(entry);
    if (at >= 0) this.queue.splice(at, 1);
    this.tell(entry, this.fencing.acknowledgedLate(entry.fence), seq);
    if (this.queue.length === 0) for (const wake of this.emptied.splice(0)) wake();
  }

  private readonly emptied: Array<() => void> = [];

  /** Resolves once every message published so far (resends included) is acknowledged by the stream. */
  acknowledged(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  private failed(entry: Outbound, error: unknown): void {
    if (entry.acked) return;
    this.tell(entry, unavailable('the cluster log (NATS JetStream) is unreachable; the write was not acknowledged, retry'));
    if (this.retrying !== undefined) return;
    this.options.log.warn('state publish failed; resending in order', { error: String(error), queued: this.queue.length });
    this.retrying = this.resend().finally(() => (this.retrying = undefined));
  }

  /** Resends every unacknowledged message in order, one at a time, until the queue is empty (or the node closes). */
  private async resend(): Promise<void> {
    while (this.queue.length > 0) {
      const entry = this.queue[0];
      if (entry === undefined) break;
      if (entry.acked) {
        this.queue.shift();
        continue;
      }
      try {
        this.acked(entry, await this.transmit(entry));
      } catch (error) {
        this.tell(entry, unavailable('the cluster log (NATS JetStream) is unreachable; the write was not acknowledged, retry'));
        if (this.closed) return;
        if (++this.resendFailures % 20 === 1) this.options.log.warn('state resend failed; writes wait behind it', { error: String(error), queued: this.queue.length, failures: this.resendFailures });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private tell(entry: Outbound, error: unknown, seq = 0): void {
    if (entry.told) return;
    entry.told = true;
    clearTimeout(entry.timer);
    if (error === undefined) entry.resolve(seq);
    else entry.reject(error);
  }

  // ---- the local cache and the applier ----

  /**
   * Takes the data directory for this node (refusing a second node on it), checks the cache (rebuilding a dirty one
   * or one of another stream), marks it dirty until a clean close, and catches up with the stream before returning.
   */
  async attach(store: Store): Promise<void> {
    this.lock = DataDirLock.take(store.path);
    const meta = store.records<unknown>(DB.meta);
    const cache = meta.get(CACHE_KEY) as CacheState | undefined;
    const log = this.options.log;
    if (cache === undefined) {
      if (store.holdsReplicatedRows()) {
        this.lock.release();
        throw new Error(
          `DATA_DIR ${store.path} holds data written outside cluster mode; cluster mode keeps durable state in JetStream and needs an empty DATA_DIR (moving single-process data into a cluster is not built)`,
        );
      }
    } else if (cache.dirty || cache.stream !== this.streamCreated) {
      log.warn('the local cache may hold writes the cluster never acknowledged (the node stopped without a clean close) or belongs to another stream: wiping it and rebuilding from the stream', {
        dirty: cache.dirty,
        stream: this.streamCreated,
        cacheStream: cache.stream,
      });
      await store.wipeReplicated();
      meta.removeSync(POSITION_KEY);
      ClaimTable.clear(meta);
      meta.removeSync(GAPS_KEY);
    }
    this.fencing.claims.load(meta);
    this.order.restore(meta.get(GAPS_KEY));
    // From here on the cache is this node's: close() may mark it clean.
    this.store = store;
    this.applied = (meta.get(POSITION_KEY) as number | undefined) ?? 0;
    meta.putSync(CACHE_KEY, { stream: this.streamCreated, dirty: true } satisfies CacheState);
    const from = this.applied;
    this.applying = this.applyLoop();
    await this.catchUp();
    log.info('state caught up with the cluster log', { from, applied: this.applied });
  }

  /** Resolves once the local cache holds every message the stream had when called; UNAVAILABLE when it cannot. */
  async catchUp(): Promise<void> {
    let last: number;
    try {
      last = (await this.jsm.streams.info(STATE_STREAM)).state.last_seq;
    } catch (error) {
      this.options.log.warn('cannot read the cluster log position', { error: String(error) });
      throw unavailable('the cluster log (NATS JetStream) is unreachable; retry shortly');
    }
    await this.reach(last);
  }

  /** Resolves once the applier has passed stream sequence `seq`; UNAVAILABLE after the catch-up timeout. */
  private async reach(seq: number): Promise<void> {
    if (this.applied >= seq) return;
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        seq,
        wake: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(unavailable('this node is still catching up with the cluster log; retry shortly'));
      }, this.catchUpTimeoutMs);
      this.waiters.add(waiter);
    });
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

  /** For the metrics: the applied position, writes waiting for their acknowledgement, whether writes are refused. */
  stats(): { applied: number; unacknowledged: number; refusing: boolean; lag: number; diverged: number } {
    return { applied: this.applied, unacknowledged: this.queue.length, refusing: this.refusal() !== undefined, lag: Math.max(0, this.streamLast - this.applied), diverged: this.fencing.divergedCount };
  }

  /** The stream position applied so far (for logs and tests). */
  get position(): number {
    return this.applied;
  }

  private async applyLoop(): Promise<void> {
    while (!this.closed) {
      try {
        const consumer = await this.js.consumers.get(STATE_STREAM, { filterSubjects: STATE_SUBJECT, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.applied + 1 });
        this.messages = await consumer.consume({ max_messages: 512 });
        if (this.closed) break;
        const batch: Batch = { ops: [], messages: 0, end: this.applied, meta: [], forced: new Set() };
        for await (const message of this.messages) {
          // The stream's last sequence as of this delivery: for the lag metric, without a JetStream API request.
          this.streamLast = Math.max(this.streamLast, message.seq + message.info.pending);
          if (message.seq <= batch.end) continue;
          await this.take(message, batch);
          // Consecutive foreign messages share one LMDB transaction while the applier is behind.
          if (message.info.pending === 0 || batch.messages >= 256) await this.flush(batch);
        }
        await this.flush(batch);
      } catch (error) {
        if (this.closed) break;
        this.options.log.warn('the state applier stopped; resuming', { error: String(error), applied: this.applied });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /** Adds one stream message to the batch (a foreign one's ops), or, for this node's own, releases its keys. */
  private async take(message: JsMsg, batch: Batch): Promise<void> {
    const store = this.store;
    if (store === undefined) return;
    const tx = unpack(message.data) as TxMessage;
    if (tx.c !== undefined) {
      const own = tx.o === this.origin ? { n: tx.n } : undefined;
      const entry = this.fencing.claimLanded(tx.c, tx.r ?? 0, message.seq, own, own === undefined && this.order.admit(tx.o, tx.n, []) !== undefined);
      if (entry !== undefined) batch.meta.push(entry);
      batch.messages++;
      batch.end = message.seq;
      return;
    }
    if (tx.o === this.origin) {
      // Earlier foreign writes still lose to this one: apply them first, then its keys stop holding foreign writes back.
      await this.flush(batch);
      const own = this.ownOps(tx.n);
      if (own !== undefined) store.ownApplied(own);
      this.fencing.ownLanded(tx.f, message.seq);
      batch.end = message.seq;
      this.advance(message.seq);
      return;
    }
    let ops = tx.ops;
    if (ops === undefined && tx.b !== undefined) {
      const blob = await this.blobs.getBlob(tx.b);
      if (blob === null) throw new Error(`the blob ${tx.b} of stream message ${message.seq} is missing`);
      ops = (unpack(blob) as TxMessage).ops;
    }
    for (const op of this.order.admit(tx.o, tx.n, this.fencing.foreign(ops ?? [], tx.f, tx.o, message.seq)) ?? []) {
      batch.ops.push(op);
      if (this.fencing.winsOverOwn(op, tx.f)) batch.forced.add(op);
    }
    batch.messages++;
    batch.end = message.seq;
  }

  /** Applies the batch's ops in one transaction with its last sequence as the position. */
  private async flush(batch: Batch): Promise<void> {
    const store = this.store;
    if (store === undefined || batch.messages === 0) return;
    const { ops, meta, forced } = batch;
    const gaps = this.order.changes();
    if (gaps !== undefined) meta.push({ key: GAPS_KEY, value: gaps });
    batch.ops = [];
    batch.meta = [];
    batch.forced = new Set();
    batch.messages = 0;
    await store.applyReplicated(ops, [{ key: POSITION_KEY, value: batch.end }, ...meta], forced.size === 0 ? undefined : forced);
    this.advance(batch.end);
  }

  private readonly order = new OriginOrder();

  /** Ops of this boot's messages, kept until the applier passes them (by counter). */
  private readonly sent = new Map<number, readonly ReplicatedOp[]>();

  private ownOps(n: number): readonly ReplicatedOp[] | undefined {
    const ops = this.sent.get(n);
    this.sent.delete(n);
    return ops;
  }

  private advance(seq: number): void {
    if (seq <= this.applied) return;
    this.applied = seq;
    for (const waiter of [...this.waiters]) {
      if (waiter.seq > seq) continue;
      this.waiters.delete(waiter);
      waiter.wake();
    }
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
    const n = ++this.counter;
    this.fencing.claiming(n);
    const seq = await this.enqueue(n, [], pack({ o: this.origin, n, c: document, r: revision } satisfies TxMessage), undefined);
    this.fencing.epochs.hold(document, seq, revision);
    await this.reach(seq);
  }

  /** The document was released after its last write: later writes of it here are not fenced. */
  releaseDocument(document: string): void {
    this.fencing.epochs.forget(document);
  }

  /**
   * After the store's last write: waits (bounded) for unacknowledged messages, stops the applier, and marks the cache
   * clean only when every local write is in the stream (else the next start rebuilds it).
   */
  async close(): Promise<void> {
    const store = this.store;
    if (store !== undefined) await store.group.settled();
    const deadline = Date.now() + this.publishTimeoutMs;
    while (this.queue.length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    this.closed = true;
    const unacked = this.queue.length;
    for (const entry of this.queue.splice(0)) this.tell(entry, unavailable('the node is stopping'));
    for (const wake of this.emptied.splice(0)) wake();
    // Bounded: with NATS away the consumer's close would wait for the server.
    await Promise.race([Promise.all([this.messages?.close(), this.applying]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    if (store !== undefined) {
      const meta = store.records<unknown>(DB.meta);
      if (unacked === 0 && this.fencing.divergedCount === 0) {
        // DB.meta is node-local (never recorded), and writes through the store are refused once closed.
        meta.putSync(POSITION_KEY, this.applied);
        meta.putSync(CACHE_KEY, { stream: this.streamCreated, dirty: false } satisfies CacheState);
      } else this.options.log.warn('stopping with writes the cluster log never acknowledged (or fenced off): the cache stays dirty and is rebuilt at the next start', { unacked, diverged: this.fencing.divergedCount });
    }
    this.lock?.release();
  }
}
