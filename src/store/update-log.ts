// Owns the document update log: appends batched into one LMDB transaction per turn (group commit) and compaction.
import type { Logger } from '../log.js';
import { groupCommitInstrument } from '../metrics/instruments.js';
import type { Store } from './env.js';
import { LogRowBuilder } from './log-rows.js';
import { Snapshots, type StoreId, type StoreMeta } from './snapshots.js';

const instrument = groupCommitInstrument('updates');

/** Row builders kept for reuse (LogRowBuilder), at most this many: about one per document of a busy commit. */
const SPARE_ROWS = 64;

/** One store's position in the log. The actor owns it; the log advances the counters. */
export interface LogStream {
  readonly id: StoreId;
  /** Sequence number the next append gets. */
  nextSeq: number;
  /** Entries and bytes in the log that no snapshot folds yet: the compaction trigger. */
  logCount: number;
  logBytes: number;
  /** Bytes of the store's last snapshot (0: none yet); set by the log when it takes one, by the owner when it loads one. */
  snapshotBytes: number;
  /** Set when a snapshot must be written at the next commit (a failed commit, an unload). */
  needsSnapshot: boolean;
  meta(): StoreMeta;
  /** The store's full state now (Y.encodeStateAsUpdate); folds every entry appended so far. */
  snapshot(): Uint8Array;
  /**
   * Told when this stream's writes failed on their own (the others of the commit landed): they are not retried, so
   * memory must go back to what is on disk.
   */
  writeFailed?(error: unknown): void;
}

export interface DurabilityOptions {
  /** 0 = commit at the end of the current event-loop turn; otherwise wait this long to gather more appends. */
  readonly groupCommitMs: number;
  readonly compactAfterUpdates: number;
  readonly compactAfterBytes: number;
}

/** What one stream has waiting for the next commit, and the promise its appends return. */
interface Pending {
  /** The appends' row in the making (one row per commit: see `UpdateLog.prepare`). */
  readonly row: LogRowBuilder;
  /** The sequence number of the last append: the row's key, so a load's next sequence follows it. */
  lastSeq: number;
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

const committed = Promise.resolve();

function newPending(log: Logger, row: LogRowBuilder): Pending {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  // Logged here so a commit failure is reported once even when no caller awaits (WebSocket edits).
  promise.catch((error: unknown) => log.error('document update commit failed', { error }));
  return { row, lastSeq: -1, promise, resolve, reject };
}

export class UpdateLog {
  /** Streams with appends or a snapshot request waiting for the next commit. */
  private pending = new Map<LogStream, Pending>();
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private lastCommit: Promise<void> = committed;
  /** Row builders of past commits, for the next ones: their buffers do not churn (bench/README.md, twenty-second session). */
  private readonly spareRows: LogRowBuilder[] = [];
  readonly snapshots: Snapshots;

  /** `store` null = persistence off (bench comparison): appends are counted, never written. */
  constructor(private readonly store: Store | null, private readonly options: DurabilityOptions, private readonly log: Logger) {
    this.snapshots = new Snapshots(store);
  }

  get persistent(): boolean {
    return this.store !== null;
  }

  /** Appends one update; resolves once the transaction holding it has committed. Peers need not wait for this. */
  append(stream: LogStream, update: Uint8Array): Promise<void> {
    stream.logCount++;
    stream.logBytes += update.length;
    const seq = stream.nextSeq++;
    if (this.store === null) return committed;
    const pending = this.enlist(stream);
    pending.row.add(update);
    pending.lastSeq = seq;
    return pending.promise;
  }

  /** Asks for a snapshot of `stream` in the next commit (final snapshot on unload); resolves once committed. */
  requestSnapshot(stream: LogStream): Promise<void> {
    if (this.store === null) return committed;
    stream.needsSnapshot = true;
    return this.enlist(stream).promise;
  }

  /** Commits whatever is pending now; resolves when it and every earlier commit are done. Never rejects. */
  flush(): Promise<void> {
    if (this.pending.size > 0) this.commit();
    return this.lastCommit;
  }

  /** Commits what is pending, then deletes every store under `prefix` in one transaction (document deleted). */
  async removeAll(prefix: readonly string[]): Promise<void> {
    await this.flush();
    const store = this.store;
    if (store === null) return;
    await store.transaction(() => this.snapshots.removeAll(prefix));
  }

  /** `schedule` false: the stream joins whatever commit comes next, but starts none (a retry after a failed commit). */
  private enlist(stream: LogStream, schedule = true): Pending {
    let pending = this.pending.get(stream);
    if (pending === undefined) {
      pending = newPending(this.log, this.spareRows.pop() ?? new LogRowBuilder());
      this.pending.set(stream, pending);
    }
    if (schedule) this.timer ??= this.options.groupCommitMs === 0 ? setImmediate(() => this.commit()) : setTimeout(() => this.commit(), this.options.groupCommitMs);
    return pending;
  }

  /**
   * Writes every pending stream in one LMDB transaction, all-or-nothing per stream (child transactions): a stream that
   * cannot be written (a key LMDB refuses, a snapshot that throws) fails alone, is told through `writeFailed` and is
   * not retried, while the others commit. Only a failure of the whole transaction fails them all (and then each
   * writes a full snapshot at its next commit). Runs from a timer: it never throws.
   */
  private commit(): void {
    const store = this.store;
    if (this.timer !== undefined) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = undefined;
    }
    if (store === null || this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const started = performance.now();
    let written = 0;
    const commits: Array<Promise<void>> = [];
    for (const [stream, pending] of batch) {
      let write: () => void;
      written += pending.row.count;
      try {
        write = this.prepare(stream, pending);
      } catch (error) {
        this.refuse(stream, pending, error);
        continue;
      } finally {
        pending.row.clear();
        if (this.spareRows.length < SPARE_ROWS) this.spareRows.push(pending.row);
      }
      // Through the group commit: one LMDB transaction for the whole batch, the streams in one child transaction
      // (repeatable: the writes are prepared, so run again after a rollback they write the same); when a stream's write
      // throws, that child is rolled back and each stream runs in a child of its own, so it aborts alone. `own` tells
      // its failure from a failure of the whole commit.
      let own: { error: unknown } | undefined;
      commits.push(
        new Promise<void>((settled) => {
          store.transactionGrouped({
            repeatable: true,
            write: () => {
              own = undefined;
              try {
                write();
              } catch (error) {
                own = { error };
                throw error;
              }
            },
            settle: (error: unknown) => {
              if (error === undefined) pending.resolve();
              else if (own !== undefined) this.refuse(stream, pending, own.error);
              else {
                // The commit itself failed: what it held is still in memory, so the next commit writes a full snapshot.
                stream.needsSnapshot = true;
                this.enlist(stream, false);
                pending.reject(error);
              }
              settled();
            },
          });
        }),
      );
    }
    this.lastCommit = Promise.all(commits).then(() => {
      if (commits.length > 0) instrument.observe(written, (performance.now() - started) / 1000);
    });
  }

  /**
   * The writes of one stream, as a function run inside the transaction. The snapshot (when one is due) is taken now,
   * synchronously, so it folds exactly the entries appended before its boundary.
   */
  private prepare(stream: LogStream, pending: Pending): () => void {
    const snapshots = this.snapshots;
    const id = stream.id;
    if (stream.needsSnapshot || compactionDue(stream, this.options)) {
      const boundary = stream.nextSeq;
      const snapshot = stream.snapshot();
      const meta = stream.meta();
      stream.needsSnapshot = false;
      stream.logCount = 0;
      stream.logBytes = 0;
      stream.snapshotBytes = snapshot.length;
      return () => snapshots.fold(id, snapshot, meta, boundary);
    }
    const meta = stream.meta();
    // One row per commit, not per update: every row costs an LMDB put here and, in cluster mode, a replicated op that
    // every other node applies (bench/cluster.ts). Under the last append's sequence number.
    const seq = pending.lastSeq;
    const row = pending.row.count > 0 ? pending.row.take() : undefined;
    return () => {
      if (row !== undefined) snapshots.putEntry(id, seq, row);
      snapshots.putMeta(id, meta);
    };
  }

  /** A stream that could not be written: its appends fail, and its owner puts memory back to what is committed. */
  private refuse(stream: LogStream, pending: Pending, error: unknown): void {
    pending.reject(error);
    try {
      stream.writeFailed?.(error);
    } catch (failure) {
      this.log.error('a store could not be restored after a failed write', { error: failure });
    }
  }
}

/** Past this many times COMPACT_AFTER_UPDATES a snapshot is taken whatever the sizes: a bound on the entries a load merges. */
export const COMPACT_COUNT_CAP = 16;
/** The log must hold at least 1/COMPACT_SIZE_SHARE of the last snapshot's bytes before its count alone takes a snapshot. */
export const COMPACT_SIZE_SHARE = 4;

/**
 * Whether the next commit takes a snapshot of `stream`: past COMPACT_COUNT_CAP × COMPACT_AFTER_UPDATES entries, or,
 * once the log holds a quarter of the last snapshot's bytes, past COMPACT_AFTER_BYTES or COMPACT_AFTER_UPDATES entries.
 * A snapshot costs an encoding of the whole store, so a fixed count made a large document pay its full size every 1000
 * updates (a 1×50 burst's profile: `Y.encodeStateAsUpdate` in compaction was ~20 % of the server's JavaScript), and a
 * fixed byte count made it pay its full size at every large update: a client sending 16 MiB frames had the store
 * encoded whole at each one, a cost growing with the store (seconds of the event loop at 200 MB, bench/README.md,
 * "Noisy neighbours"). With the share, the bytes encoded for snapshots are at most four times the bytes logged (plus
 * the count cap's), and a load merges a tail of at most a quarter of the snapshot, COMPACT_AFTER_BYTES or the caps.
 */
export function compactionDue(stream: Pick<LogStream, 'logCount' | 'logBytes' | 'snapshotBytes'>, options: Pick<DurabilityOptions, 'compactAfterUpdates' | 'compactAfterBytes'>): boolean {
  if (stream.logCount > options.compactAfterUpdates * COMPACT_COUNT_CAP) return true;
  if (stream.logBytes * COMPACT_SIZE_SHARE < stream.snapshotBytes) return false;
  return stream.logBytes > options.compactAfterBytes || stream.logCount > options.compactAfterUpdates;
}
