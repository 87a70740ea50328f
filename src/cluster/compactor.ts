// Owns compaction of the state log on the worker-role holder: a checkpoint built from the stream in a scratch LMDB, the purge of the stream and of the blobs only purged messages referenced, old checkpoints' removal, and the sweep of what cut-off runs and uploads left.
import { join } from 'node:path';
import { DeliverPolicy, RequestStrategy, type JetStreamManager, type NatsConnection, type ObjectStore } from 'nats';
import type { Logger } from '../log.js';
import { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { ReplicatedOp } from '../store/replication.js';
import { CHECKPOINT_BLOBS_KEY, CHECKPOINT_BUCKET, deleteCheckpointsBefore, newestCheckpoint, readCheckpoint, writeCheckpoint } from './checkpoint.js';
import { ClaimTable } from './fence.js';
import { ROLE_BUCKET } from './leases.js';
import { nodeLivenessKey } from './worker-lease.js';
import { GAPS_KEY, OriginOrder } from './origin-order.js';
import { APPLY_BATCH_OPS, BLOB_BUCKET, readTx, STATE_PULL_MESSAGES, STATE_STREAM, STATE_SUBJECT } from './state-message.js';
import { blobRef, deleteBlobsUpTo, SWEEP_GRACE_MS, sweepOrphanChunks } from './sweep.js';

/** Every node answers here with the stream sequence its cache has applied (the purge never passes the slowest). */
export const APPLIED_SUBJECT = 'plait.state.applied';
/** DB.meta keys of the scratch store: the stream it was built from and how far it applied (blobs messages referenced: `blobRef`). */
const SCRATCH_STREAM = 'checkpointStream';
const SCRATCH_POSITION = 'checkpointApplied';
/** What every node's liveness key in the role bucket starts with. */
const LIVENESS_PREFIX = nodeLivenessKey('');
/** How long the purge waits for every node to say how far it applied. */
const APPLIED_WAIT_MS = 1_000;
/** How often the holder sweeps orphan chunks between compactions (and at once when it takes the role). */
const SWEEP_EVERY_MS = SWEEP_GRACE_MS;

export interface CompactorOptions {
  readonly log: Logger;
  /** The node's DATA_DIR: the scratch store lives in `checkpoint/` beside the cache. */
  readonly dataDir: string;
  /** The stream's creation time (checkpoints name it). */
  readonly stream: string;
  /** State-log bytes since the last checkpoint that trigger the next (0: never automatically). */
  readonly thresholdBytes: number;
  /** Whether this node holds the worker role now. */
  readonly holder: () => boolean;
  /** Tests: runs between pieces of the checkpoint's upload. */
  readonly paced?: () => Promise<void>;
}

export interface CheckpointStats {
  /** The newest checkpoint this node wrote: its stream sequence, size, rows and how long it took. */
  seq: number;
  bytes: number;
  rows: number;
  durationMs: number;
  /** Where the last purge cut the stream (messages up to it are gone), and how many blobs it deleted. */
  purgedTo: number;
  blobsDeleted: number;
}

/** What one sweep removed: uploads cut off half-way (per object store) and blobs of purged messages an earlier run left. */
export interface SweepStats {
  checkpointUploads: number;
  checkpointChunks: number;
  blobUploads: number;
  blobChunks: number;
  blobsLeft: number;
  bytes: number;
  /** Uploads without metadata younger than the grace, left alone (maybe in progress). */
  young: number;
}

/**
 * Compaction. A checkpoint is the fold of the stream's messages 1..S in stream order (the same per-origin order rules as
 * every node's applier), built by applying the stream into a scratch LMDB of this node, never read from the live
 * cache: the cache may hold this node's own committed writes whose messages come after S. The scratch store is kept
 * between checkpoints, so each one applies only the messages since the last; a holder that finds it missing or behind
 * the stream's first sequence loads the newest checkpoint into it first. After the checkpoint is complete the stream is
 * purged up to min(S, every live node's applied position), then the blobs of purged messages and older checkpoints are
 * deleted. One run at a time; only the worker-role holder runs.
 */
export class Compactor {
  private running: Promise<CheckpointStats | undefined> | undefined;
  /** Runs and sweeps one at a time: a sweep never sees this node's own checkpoint half-uploaded. */
  private queue: Promise<unknown> = Promise.resolve();
  /** When the holder last swept (0: not since it took the role). */
  private sweptAt = 0;
  private scratch: Store | undefined;
  /** Per-origin order of the messages applied into the scratch store (as on every node's applier). */
  private order = new OriginOrder();
  /** The newest claim per document among the messages applied into the scratch store (fencing, as on every applier). */
  private readonly claims = new ClaimTable();
  /** State-log bytes right after this node's last compaction (the trigger counts growth from there). */
  private baseline = 0;
  last: CheckpointStats | undefined;
  /** The stream's first and last sequence and the state log's bytes, as last read. */
  readonly stream = { first: 0, last: 0, bytes: 0 };
  /** What sweeps removed since this process started (metrics). */
  readonly swept = { objects: 0, bytes: 0 };

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly blobs: ObjectStore,
    private readonly checkpoints: ObjectStore,
    private readonly options: CompactorOptions,
  ) {}

  private readonly listeners: Array<(stats: CheckpointStats) => void> = [];

  /** Told after each completed compaction (logs, tests). */
  onCheckpoint(listener: (stats: CheckpointStats) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the stream's size and, on the holder, sweeps now and then and compacts past the threshold. Never throws (logs). */
  async tick(): Promise<void> {
    try {
      const size = await this.measure();
      if (!this.options.holder()) {
        this.sweptAt = 0;
        return;
      }
      if (Date.now() - this.sweptAt >= SWEEP_EVERY_MS) await this.sweep();
      if (this.options.thresholdBytes === 0 || size - this.baseline < this.options.thresholdBytes) return;
      this.options.log.info('the state log passed its checkpoint threshold: compacting', { bytes: size, since: size - this.baseline, threshold: this.options.thresholdBytes });
      await this.compact({ asHolder: true });
    } catch (error) {
      this.options.log.warn('state log compaction or sweep failed; retrying at the next check', { error: String(error) });
    }
  }

  /** The state log's bytes: the stream's and the blob store's. */
  private async measure(): Promise<number> {
    const info = await this.jsm.streams.info(STATE_STREAM);
    const blobs = await this.blobs.status();
    this.stream.first = info.state.first_seq;
    this.stream.last = info.state.last_seq;
    this.stream.bytes = info.state.bytes + blobs.size;
    return this.stream.bytes;
  }

  /**
   * Checkpoint at the stream's last sequence, then purge. Resolves undefined when there was nothing new. `asHolder`: the
   * run stops (no metadata, no purge, no deletes) as soon as this node no longer holds the worker role; a run by hand
   * (tests, bench) does not ask.
   */
  compact(options: { asHolder?: boolean } = {}): Promise<CheckpointStats | undefined> {
    const mine = options.asHolder === true ? this.options.holder : () => true;
    this.running ??= this.serially(() => this.run(mine)).finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * Sweeps both object stores of uploads cut off half-way whose newest chunk is older than `graceMs`, and, once the
   * scratch store is open, deletes the blobs it knows of messages already purged (a run cut off before its deletes, or
   * a previous holder's, carried by the checkpoint). Waits for a run in progress: never sees this node's own upload.
   */
  sweep(options: { graceMs?: number } = {}): Promise<SweepStats> {
    return this.serially(async () => {
      const firstSeq = (await this.jsm.streams.info(STATE_STREAM)).state.first_seq;
      return this.sweepNow(this.scratch, firstSeq, options.graceMs ?? SWEEP_GRACE_MS);
    });
  }

  /** Runs `work` after every run and sweep queued before it. */
  private serially<T>(work: () => Promise<T>): Promise<T> {
    const result = this.queue.then(work);
    // The queue only orders; `work`'s failure reaches its own caller through `result`.
    this.queue = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  private async sweepNow(store: Store | undefined, firstSeq: number, graceMs: number): Promise<SweepStats> {
    this.sweptAt = Date.now();
    const log = this.options.log;
    const checkpoints = await sweepOrphanChunks(this.jsm, this.checkpoints, CHECKPOINT_BUCKET, graceMs, log);
    const blobChunks = await sweepOrphanChunks(this.jsm, this.blobs, BLOB_BUCKET, graceMs, log);
    const left = store === undefined ? { deleted: 0, bytes: 0 } : await deleteBlobsUpTo(store, this.blobs, firstSeq - 1, log);
    const stats: SweepStats = {
      checkpointUploads: checkpoints.uploads,
      checkpointChunks: checkpoints.chunks,
      blobUploads: blobChunks.uploads,
      blobChunks: blobChunks.chunks,
      blobsLeft: left.deleted,
      bytes: checkpoints.bytes + blobChunks.bytes + left.bytes,
      young: checkpoints.young + blobChunks.young,
    };
    this.swept.objects += stats.checkpointUploads + stats.blobUploads + stats.blobsLeft;
    this.swept.bytes += stats.bytes;
    if (stats.checkpointUploads + stats.blobUploads + stats.blobsLeft > 0) log.info('swept the state log\'s object stores of what cut-off runs and uploads left', { ...stats });
    else log.debug('swept the state log\'s object stores: nothing left behind', { young: stats.young });
    return stats;
  }

  private async run(mine: () => boolean): Promise<CheckpointStats | undefined> {
    const started = performance.now();
    const log = this.options.log;
    const stillMine = (): void => {
      if (!mine()) throw new Error('this node no longer holds the worker role: the checkpoint stops here');
    };
    const info = await this.jsm.streams.info(STATE_STREAM);
    const end = info.state.last_seq;
    const store = await this.prepareScratch(info.state.first_seq);
    // Before anything is written: this node uploads nothing now, and every blob it knows of a purged message can go.
    await this.sweepNow(store, info.state.first_seq, SWEEP_GRACE_MS).catch((error: unknown) => log.warn('the sweep before a compaction failed; compacting anyway', { error: String(error) }));
    let position = this.scratchPosition(store);
    const newest = await newestCheckpoint(this.checkpoints);
    if (end <= position && (newest?.seq ?? 0) >= position) return undefined;
    if (end > position) position = await this.applyUpTo(store, position, end);
    const meta = store.records<unknown>(DB.meta);
    // The blobs not deleted yet travel with the checkpoint: a holder that loads it deletes them once purged.
    const pending = [...meta.getRange({ start: blobRef(0), end: blobRef(position + 1) })].map(({ key, value }) => [(key as [string, number])[1], value]);
    const fold: Array<[string, unknown]> = [...ClaimTable.stored(meta), [GAPS_KEY, meta.get(GAPS_KEY) ?? []], [CHECKPOINT_BLOBS_KEY, pending]];
    const paced = async (): Promise<void> => {
      stillMine();
      await this.options.paced?.();
    };
    const written = await writeCheckpoint(this.checkpoints, { seq: position, stream: this.options.stream, meta: fold }, store.replicatedRows(), paced);
    // The checkpoint is complete: older ones are no longer needed by a rebuild that starts now.
    const purgedTo = Math.min(position, await this.slowestApplied());
    stillMine();
    if (purgedTo > 0) await this.jsm.streams.purge(STATE_STREAM, { seq: purgedTo + 1 });
    const blobsDeleted = (await deleteBlobsUpTo(store, this.blobs, purgedTo, log)).deleted;
    const oldDeleted = await deleteCheckpointsBefore(this.checkpoints, position);
    this.baseline = await this.measure();
    const stats: CheckpointStats = { seq: position, bytes: written.bytes, rows: written.rows, durationMs: performance.now() - started, purgedTo, blobsDeleted };
    this.last = stats;
    for (const listener of this.listeners) listener(stats);
    log.info('state checkpoint written and the stream purged', { ...stats, oldCheckpointsDeleted: oldDeleted });
    return stats;
  }

  /** Opens the scratch store; empties it and loads the newest checkpoint when it is of another stream or behind the stream's start. */
  private async prepareScratch(firstSeq: number): Promise<Store> {
    const store = (this.scratch ??= Store.open(join(this.options.dataDir, 'checkpoint')));
    const meta = store.records<unknown>(DB.meta);
    if (meta.get(SCRATCH_STREAM) === this.options.stream && this.scratchPosition(store) >= firstSeq - 1) {
      // Kept from an earlier run (maybe of an earlier process): its fold state is stored beside its rows.
      this.claims.load(meta);
      this.order = new OriginOrder();
      this.order.restore(meta.get(GAPS_KEY));
      return store;
    }
    await store.wipeReplicated();
    this.order = new OriginOrder();
    await store.transaction(() => {
      for (const { key } of meta.getRange({})) if (key !== 'schemaVersion') void meta.remove(key);
    });
    const newest = await newestCheckpoint(this.checkpoints);
    let position = 0;
    if (newest !== undefined) {
      let fold: ReadonlyArray<readonly [string, unknown]> = [];
      await readCheckpoint(this.checkpoints, newest, this.options.stream, (rows) => store.applyReplicated(rows, { key: SCRATCH_POSITION, value: 0 }), (entries) => (fold = entries));
      await store.transaction(() => {
        for (const [key, value] of fold) {
          if (key !== CHECKPOINT_BLOBS_KEY) void meta.put(key, value);
          else if (Array.isArray(value)) for (const ref of value as unknown[]) if (Array.isArray(ref) && typeof ref[0] === 'number' && typeof ref[1] === 'string') void meta.put(blobRef(ref[0]), ref[1]);
        }
      });
      position = newest.seq;
    }
    this.claims.load(meta);
    this.order.restore(meta.get(GAPS_KEY));
    if (position < firstSeq - 1) throw new Error(`the state stream starts at ${firstSeq} but the newest checkpoint is at ${position}: messages between are lost`);
    await store.transaction(() => {
      void meta.put(SCRATCH_POSITION, position);
      void meta.put(SCRATCH_STREAM, this.options.stream);
    });
    return store;
  }

  private scratchPosition(store: Store): number {
    return (store.records<unknown>(DB.meta).get(SCRATCH_POSITION) as number | undefined) ?? 0;
  }

  /** Applies stream messages after `from` up to `end` into the scratch store, recording which blobs they referenced. */
  private async applyUpTo(store: Store, from: number, end: number): Promise<number> {
    const meta = store.records<unknown>(DB.meta);
    const consumer = await this.nc.jetstream().consumers.get(STATE_STREAM, { filterSubjects: STATE_SUBJECT, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from + 1 });
    const messages = await consumer.consume({ max_messages: STATE_PULL_MESSAGES });
    let position = from;
    let ops: ReplicatedOp[] = [];
    let blobs: Array<[number, string]> = [];
    /** DB.meta entries stored with the position: claims applied, and the open gaps when they changed. */
    let fold: Array<{ key: string; value: unknown }> = [];
    const flush = async (): Promise<void> => {
      if (blobs.length > 0) {
        const refs = blobs;
        await store.transaction(() => {
          for (const [seq, name] of refs) void meta.put(blobRef(seq), name);
        });
      }
      const gaps = this.order.changes();
      if (gaps !== undefined) fold.push({ key: GAPS_KEY, value: gaps });
      await store.applyReplicated(ops, [{ key: SCRATCH_POSITION, value: position }, ...fold]);
      ops = [];
      blobs = [];
      fold = [];
    };
    try {
      for await (const message of messages) {
        if (message.seq <= position) continue;
        if (message.seq > position + 1) throw new Error(`the state stream skips from ${position} to ${message.seq} (purged by another node?)`);
        const head = await readTx(message.data, this.blobs, message.seq, false);
        // A second copy's blob is recorded too (a resend uploads it again), and is not read: as on every applier.
        if (head.blob !== undefined) blobs.push([message.seq, head.blob]);
        const tx = head.blob === undefined || this.order.applied(head.origin, head.n) ? head : await readTx(message.data, this.blobs, message.seq);
        if (tx.purgedCopy === true) this.options.log.warn('dropped a second copy of a message whose first copy was purged (its blob is deleted)', { origin: tx.origin, n: tx.n, seq: message.seq });
        else if (tx.claim !== undefined) {
          // A claim starts the document's new epoch (a second copy of it does not): as every node's applier does.
          const entry = this.order.admit(tx.origin, tx.n, []) === undefined ? undefined : this.claims.claim(tx.claim.document, message.seq, tx.claim.revision);
          if (entry !== undefined) fold.push(entry);
        } else {
          // Writes of an owner whose epoch a later claim outdated are dropped here too (src/cluster/fence.ts).
          for (const op of this.order.admit(tx.origin, tx.n, this.claims.sort(tx.ops, tx.fence).kept) ?? []) ops.push(op);
        }
        position = message.seq;
        if (ops.length >= APPLY_BATCH_OPS || blobs.length >= 64) await flush();
        if (position >= end) break;
      }
      await flush();
    } finally {
      await messages.close();
    }
    return position;
  }

  /**
   * The lowest applied position the live nodes report (this node's included). Every node holding its liveness key must
   * answer: one that does not (busy, starting, cut off) would meet a gap after the purge, so the purge waits for a later
   * run (0: purge nothing now).
   */
  private async slowestApplied(): Promise<number> {
    const live = await this.liveNodes();
    const replied = new Map<string, number>();
    // Done once as many nodes answered as hold liveness (a node answering in place of a live one only skips the purge).
    const replies = await this.nc.requestMany(
      APPLIED_SUBJECT,
      undefined,
      live.size > 0 ? { strategy: RequestStrategy.Count, maxMessages: live.size, maxWait: APPLIED_WAIT_MS } : { strategy: RequestStrategy.Timer, maxWait: APPLIED_WAIT_MS },
    );
    for await (const reply of replies) {
      const answer = JSON.parse(new TextDecoder().decode(reply.data)) as { node?: unknown; applied?: unknown };
      if (typeof answer.node === 'string' && typeof answer.applied === 'number') replied.set(answer.node, Math.min(answer.applied, replied.get(answer.node) ?? Number.MAX_SAFE_INTEGER));
    }
    const silent = [...live].filter((node) => !replied.has(node));
    if (silent.length > 0 || replied.size === 0) {
      this.options.log.warn('live nodes did not say how far they applied: the stream is not purged this time', { silent });
      return 0;
    }
    return Math.min(...replied.values());
  }

  /** Node ids holding an unexpired liveness key in the role bucket (src/cluster/worker-lease.ts). */
  private async liveNodes(): Promise<Set<string>> {
    const kv = await this.nc.jetstream().views.kv(ROLE_BUCKET);
    const live = new Set<string>();
    const now = Date.now();
    // Keys first, values after: with a get inside the listing loop only the first key came (nats.js 2.29).
    const names: string[] = [];
    for await (const key of await kv.keys()) names.push(key);
    for (const key of names) {
      const name = Buffer.from(key, 'base64url').toString('utf8');
      if (!name.startsWith(LIVENESS_PREFIX)) continue;
      const entry = await kv.get(key);
      if (entry === null || entry.value.length === 0) continue;
      const value = JSON.parse(new TextDecoder().decode(entry.value)) as { node?: unknown; expiresAt?: unknown };
      if (typeof value.node === 'string' && typeof value.expiresAt === 'number' && value.expiresAt > now) live.add(value.node);
    }
    return live;
  }

  /** Waits for a run or sweep in progress and closes the scratch store. */
  async close(): Promise<void> {
    await this.queue;
    await this.running?.catch((error: unknown) => this.options.log.debug('compaction ended by the stop', { error: String(error) }));
    await this.scratch?.close();
    this.scratch = undefined;
  }
}
