// Owns the state applier: consumes the state stream in order into this node's LMDB cache, foreign writes batched into one transaction, this node's own released.
import { DeliverPolicy, type ConsumerMessages, type JetStreamClient, type JsMsg, type ObjectStore } from 'nats';
import type { Database, Key } from 'lmdb';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import type { ReplicatedOp } from '../store/replication.js';
import type { AppliedSeq } from './applied-seq.js';
import type { Fencing } from './fence.js';
import { GAPS_KEY, OriginOrder } from './origin-order.js';
import { APPLY_BATCH_OPS, readTx, STATE_PULL_MESSAGES, STATE_STREAM, STATE_SUBJECT } from './state-message.js';
import type { StatePublisher } from './state-publisher.js';

/** DB.meta key (node-local): where the applier is; the cache's own state (dirty, which stream) is rebuild.ts's. */
export const POSITION_KEY = 'clusterApplied';

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

export interface StateApplierDeps {
  readonly js: JetStreamClient;
  readonly blobs: ObjectStore;
  /** This node's origin: its own messages are in the cache already. */
  readonly origin: string;
  readonly store: Store;
  readonly publisher: StatePublisher;
  readonly fencing: Fencing;
  /** Highest stream sequence applied to (or, for own messages, seen by) the local cache. */
  readonly applied: AppliedSeq;
  readonly log: Logger;
  /** The state is closing: the applier stops. */
  readonly closed: () => boolean;
  /** The cache fell behind a purge: the applier stops (it never applies across a gap). */
  readonly behind: () => boolean;
  /** The next message is past a purge this cache never reached (ClusterState says why and refuses from then on). */
  readonly fallBehind: (applied: number, next: number) => void;
}

/** One node's applier over its cache; ClusterState starts it once the cache is checked and stops it at close. */
export class StateApplier {
  /** The highest stream sequence the applier has heard of (a delivered message's sequence plus those pending after it). */
  streamLast = 0;
  private order = new OriginOrder();
  private messages: ConsumerMessages | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: StateApplierDeps) {}

  /** The fold's open per-origin gaps, as stored with the position or loaded with a checkpoint. */
  restore(meta: Database<unknown, Key>): void {
    this.order = new OriginOrder();
    this.order.restore(meta.get(GAPS_KEY));
  }

  start(): void {
    this.running = this.loop();
  }

  /** Ends the consumer and waits for the loop to finish. */
  async stop(): Promise<void> {
    await Promise.all([this.messages?.close(), this.running]);
  }

  private async loop(): Promise<void> {
    const { applied, closed, behind } = this.deps;
    while (!closed() && !behind()) {
      try {
        const consumer = await this.deps.js.consumers.get(STATE_STREAM, { filterSubjects: STATE_SUBJECT, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: applied.value + 1 });
        this.messages = await consumer.consume({ max_messages: STATE_PULL_MESSAGES });
        if (closed()) break;
        const batch: Batch = { ops: [], messages: 0, end: applied.value, meta: [], forced: new Set() };
        for await (const message of this.messages) {
          // The stream's last sequence as of this delivery: for the lag metric, without a JetStream API request.
          this.streamLast = Math.max(this.streamLast, message.seq + message.info.pending);
          if (message.seq <= batch.end) continue;
          if (message.seq > batch.end + 1) {
            await this.flush(batch);
            this.deps.fallBehind(batch.end, message.seq);
            break;
          }
          await this.take(message, batch);
          // Consecutive foreign messages share one LMDB transaction while the applier is behind.
          if (message.info.pending === 0 || batch.messages >= 256 || batch.ops.length >= APPLY_BATCH_OPS) await this.flush(batch);
        }
        await this.flush(batch);
      } catch (error) {
        if (closed()) break;
        this.deps.log.warn('the state applier stopped; resuming', { error: String(error), applied: applied.value });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    await this.messages?.close();
  }

  /** Adds one stream message to the batch (a foreign one's ops), or, for this node's own, releases its keys. */
  private async take(message: JsMsg, batch: Batch): Promise<void> {
    const { fencing, blobs, store } = this.deps;
    // Own messages' ops are in the cache already: a blob message of this node is not fetched.
    const head = await readTx(message.data, blobs, message.seq, false);
    if (head.claim !== undefined) {
      const own = head.origin === this.deps.origin ? { n: head.n } : undefined;
      const entry = fencing.claimLanded(head.claim.document, head.claim.revision, message.seq, own, own === undefined && this.order.admit(head.origin, head.n, []) !== undefined);
      if (entry !== undefined) batch.meta.push(entry);
      batch.messages++;
      batch.end = message.seq;
      return;
    }
    if (head.origin === this.deps.origin) {
      // Earlier foreign writes still lose to this one: apply them first, then its keys stop holding foreign writes back.
      await this.flush(batch);
      const ops = this.deps.publisher.takeOwn(head.n);
      if (ops !== undefined) store.ownApplied(ops);
      fencing.ownLanded(head.fence, message.seq);
      batch.end = message.seq;
      this.deps.applied.advance(message.seq);
      return;
    }
    // A second copy (a resend past the duplicate window) is dropped unread: compaction may have deleted its blob.
    const tx = head.blob === undefined || this.order.applied(head.origin, head.n) ? head : await readTx(message.data, blobs, message.seq);
    if (tx.purgedCopy === true) this.deps.log.warn('dropped a second copy of a message whose first copy was purged (its blob is deleted)', { origin: tx.origin, n: tx.n, seq: message.seq });
    else {
      for (const op of this.order.admit(tx.origin, tx.n, fencing.foreign(tx.ops, tx.fence, tx.origin, message.seq)) ?? []) {
        batch.ops.push(op);
        if (fencing.winsOverOwn(op, tx.fence)) batch.forced.add(op);
      }
    }
    batch.messages++;
    batch.end = message.seq;
  }

  /** Applies the batch's ops in one transaction with its last sequence as the position. */
  private async flush(batch: Batch): Promise<void> {
    if (batch.messages === 0) return;
    const { ops, meta, forced } = batch;
    const gaps = this.order.changes();
    if (gaps !== undefined) meta.push({ key: GAPS_KEY, value: gaps });
    batch.ops = [];
    batch.meta = [];
    batch.forced = new Set();
    batch.messages = 0;
    await this.deps.store.applyReplicated(ops, [{ key: POSITION_KEY, value: batch.end }, ...meta], forced.size === 0 ? undefined : forced);
    this.deps.applied.advance(batch.end);
  }
}
