// Owns the document update log: appends batched into one LMDB transaction per turn (group commit) and compaction.
import type { Logger } from '../log.js';
import type { Store } from './env.js';
import { Snapshots, type StoreId, type StoreMeta } from './snapshots.js';

/** One store's position in the log. The actor owns it; the log advances the counters. */
export interface LogStream {
  readonly id: StoreId;
  /** Sequence number the next append gets. */
  nextSeq: number;
  /** Entries and bytes in the log that no snapshot folds yet: the compaction trigger. */
  logCount: number;
  logBytes: number;
  /** Set when a snapshot must be written at the next commit (a failed commit, an unload). */
  needsSnapshot: boolean;
  meta(): StoreMeta;
  /** The store's full state now (Y.encodeStateAsUpdate); folds every entry appended so far. */
  snapshot(): Uint8Array;
}

export interface DurabilityOptions {
  /** 0 = commit at the end of the current event-loop turn; otherwise wait this long to gather more appends. */
  readonly groupCommitMs: number;
  readonly compactAfterUpdates: number;
  readonly compactAfterBytes: number;
}

interface Entry {
  readonly stream: LogStream;
  readonly seq: number;
  readonly update: Uint8Array;
}

interface Batch {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

const committed = Promise.resolve();

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

export class UpdateLog {
  private entries: Entry[] = [];
  private dirty = new Set<LogStream>();
  private batch: Batch | undefined;
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private lastCommit: Promise<void> = committed;
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
    this.entries.push({ stream, seq, update });
    return this.enlist(stream);
  }

  /** Asks for a snapshot of `stream` in the next commit (final snapshot on unload); resolves once committed. */
  requestSnapshot(stream: LogStream): Promise<void> {
    if (this.store === null) return committed;
    stream.needsSnapshot = true;
    return this.enlist(stream);
  }

  /** Commits whatever is pending now; resolves when it and every earlier commit are done. */
  flush(): Promise<void> {
    if (this.batch !== undefined) this.commit();
    return this.lastCommit;
  }

  /** Commits what is pending, then deletes every store under `prefix` in one transaction (document deleted). */
  async removeAll(prefix: readonly string[]): Promise<void> {
    await this.flush();
    const store = this.store;
    if (store === null) return;
    await store.transaction(() => this.snapshots.removeAll(prefix));
  }

  private enlist(stream: LogStream): Promise<void> {
    this.dirty.add(stream);
    if (this.batch === undefined) {
      this.batch = newBatch();
      // Logged here so a commit failure is reported once even when no caller awaits (WebSocket edits).
      this.batch.promise.catch((error: unknown) => this.log.error('document update commit failed', { error }));
      this.timer =
        this.options.groupCommitMs === 0 ? setImmediate(() => this.commit()) : setTimeout(() => this.commit(), this.options.groupCommitMs);
    }
    return this.batch.promise;
  }

  private commit(): void {
    const batch = this.batch;
    const store = this.store;
    if (batch === undefined || store === null) return;
    if (this.timer !== undefined) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
    }
    const entries = this.entries;
    const streams = [...this.dirty];
    this.entries = [];
    this.dirty = new Set();
    this.batch = undefined;
    this.timer = undefined;

    // Snapshots are taken now, synchronously, so each folds exactly the entries appended before its boundary.
    const folds = streams
      .filter((s) => s.needsSnapshot || s.logCount > this.options.compactAfterUpdates || s.logBytes > this.options.compactAfterBytes)
      .map((stream) => {
        const fold = { stream, snapshot: stream.snapshot(), meta: stream.meta(), boundary: stream.nextSeq };
        stream.needsSnapshot = false;
        stream.logCount = 0;
        stream.logBytes = 0;
        return fold;
      });
    const folded = new Set(folds.map((fold) => fold.stream));
    const metas = streams.filter((s) => !folded.has(s)).map((stream) => ({ stream, meta: stream.meta() }));
    const snapshots = this.snapshots;
    const done = store.transaction(() => {
      for (const entry of entries) if (!folded.has(entry.stream)) snapshots.putEntry(entry.stream.id, entry.seq, entry.update);
      for (const { stream, meta } of metas) snapshots.putMeta(stream.id, meta);
      for (const fold of folds) snapshots.fold(fold.stream.id, fold.snapshot, fold.meta, fold.boundary);
    });
    this.lastCommit = done.then(
      () => batch.resolve(),
      (error: unknown) => {
        // What this batch held is still in memory: the next commit of these stores writes a full snapshot.
        for (const stream of streams) {
          stream.needsSnapshot = true;
          this.dirty.add(stream);
        }
        batch.reject(error);
      },
    );
  }
}
