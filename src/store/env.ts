// Owns the one LMDB environment: opening it, its named databases, the schema-version stamp, the one way to write, and close.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type DatabaseOptions, type Key, type RootDatabase } from 'lmdb';
import type { Logger } from '../log.js';
import { GroupCommit, type GroupedChange, type TransactionRoot } from './group-commit.js';
import { DB, JSON_ROWS, type DbName } from './keys.js';
import { jsonRows, MSGPACK_OPTIONS } from './record-codec.js';
import { stampSchema, stampPresent } from './schema.js';
import { CLUSTER_CACHE_KEY, isRange, keyId, LOCAL_ONLY, numberedKeys, Outgoing, PendingKeys, Recorder, type ChangeListener, type KeyOp, type ReplicatedOp, type Replication } from './replication.js';

/**
 * Proof that code runs inside an all-or-nothing write transaction. Only `Store.transaction` and
 * `Store.transactionGrouped` make one, so a function that takes a `WriteTx` (Outbox.append, the snapshot writes)
 * cannot be called where its writes could commit apart from the change they belong to.
 */
export interface WriteTx {
  readonly brand: 'WriteTx';
}

const TX: WriteTx = Object.freeze({ brand: 'WriteTx' });

/** A data directory's LMDB environment: a subfolder with no extension (lmdb-js reads a path with one as a single file). */
export const ENVIRONMENT_FOLDER = 'db';

/** A change for `Store.transactionGrouped`: `single`, `bounded`, `deferrable` and `repeatable` as GroupedChange has them. */
export interface GroupedWrite {
  /** Synchronous writes, committed all together or not at all. */
  write(tx: WriteTx): void;
  readonly single?: boolean;
  /** Read right before `write`. */
  readonly bounded?: boolean;
  /** It may wait `StoreOptions.deferMs` for other changes. */
  readonly deferrable?: boolean;
  /** Not in cluster mode, which records each write's ops (a rollback would not take them back). */
  readonly repeatable?: boolean;
  /** Told once: undefined when committed, else the error (at once, inside the batch, when `write` throws). */
  settle(error: unknown): void;
}

export interface StoreOptions {
  readonly log?: Pick<Logger, 'error'>;
  /** Tests only: wraps the two lmdb-js transaction calls every write goes through, to make a commit fail. */
  readonly transactions?: (root: RootDatabase) => TransactionRoot;
  /**
   * Cluster mode (src/store/replication.ts): every committed transaction's writes are published through it, and a
   * write resolves or settles only once they are acknowledged. Absent: nothing is recorded.
   */
  readonly replication?: Replication;
  /** How long a deferrable grouped change alone may wait for others to share its transaction (GROUP_COMMIT_MS); 0 by default. */
  readonly deferMs?: number;
}

/** The recording side of cluster mode: what a transaction wrote, and the order commits are handed on in. */
interface Replicating {
  readonly recorder: Recorder;
  readonly outgoing: Outgoing;
  /** The group commit's batch in the making: its place and the writes of its changes so far. */
  batch: { place: number; ops: ReplicatedOp[] } | undefined;
  /** Keys this node wrote that the stream's applier has not passed yet. */
  readonly pending: PendingKeys;
  /** Why writes are refused now (the port's `refusal`), or undefined. */
  readonly refusal: () => Error | undefined;
}

export class StoreError extends Error {
  override readonly name = 'StoreError';
}

export class Store {
  private readonly opened = new Map<string, Database<unknown, Key>>();
  private closing = false;
  /** Where every write goes: the root itself, or what a test wrapped it in. */
  private readonly writes: TransactionRoot;
  /**
   * The group commit behind `transactionGrouped` (src/store/group-commit.ts). Public for `barrier()` and `settled()`;
   * changes go in through `transactionGrouped`, which hands them the WriteTx.
   */
  readonly group: GroupCommit;
  private readonly replicating: Replicating | undefined;
  private readonly changeListeners: ChangeListener[] = [];

  private readonly log: Pick<Logger, 'error'> | undefined;

  private constructor(private readonly root: RootDatabase, readonly path: string, options: StoreOptions) {
    const log = options.log;
    this.log = log;
    this.writes = options.transactions?.(root) ?? root;
    const report = (error: unknown): void => (log === undefined ? process.emitWarning(String(error)) : log.error('group commit bookkeeping failed', { error }));
    if (options.replication !== undefined) {
      const outgoing = new Outgoing(options.replication);
      const recorder = new Recorder((op) => {
        // No write should happen outside a Store transaction (test/store/writes.test.ts); one that does still replicates.
        log?.error('a write outside a Store transaction', { db: op[0] });
        outgoing.complete(outgoing.reserve(), [op]).catch(report);
      });
      const port = options.replication;
      this.replicating = { recorder, outgoing, batch: undefined, pending: new PendingKeys(), refusal: () => port.refusal?.() };
    }
    this.group = new GroupCommit(this.writes, report, this.replicating === undefined ? undefined : (failed) => this.batchCommitted(failed), options.deferMs);
  }

  /** Opens (creating if needed) the environment in `path` and checks the schema stamp. */
  static open(path: string, options: StoreOptions = {}): Store {
    mkdirSync(path, { recursive: true });
    const store = new Store(open({ path: join(path, ENVIRONMENT_FOLDER), maxDbs: 64 }), path, options);
    store.checkSchema();
    if (options.replication === undefined) store.leaveCluster();
    return store;
  }

  /** A cluster node's cache opened alone: its writes from now on are not in the stream, so a cluster start must rebuild it. */
  private leaveCluster(): void {
    const meta = this.records<unknown>(DB.meta);
    const marker = meta.get(CLUSTER_CACHE_KEY) as { dirty?: boolean } | undefined;
    if (marker !== undefined && marker.dirty !== true) meta.putSync(CLUSTER_CACHE_KEY, { ...marker, dirty: true });
  }

  private foundVersion: number | undefined;

  /** The schema version the directory was stamped with when this process opened it; undefined: a fresh directory. */
  get foundSchemaVersion(): number | undefined {
    return this.foundVersion;
  }

  private checkSchema(): void {
    const reading = stampSchema(this.records<unknown>(DB.meta), this.path);
    if ('refused' in reading) throw new StoreError(reading.refused);
    this.foundVersion = reading.found;
  }

  /**
   * A named database of records: plain msgpack maps (`useRecords: false`; msgpackr's default inline record definitions
   * cost twice as much here, bench/README.md "REST comment writes", and still decode), or JSON for JSON_ROWS.
   */
  records<V>(name: DbName): Database<V, Key> {
    return this.named(name, 'msgpack') as Database<V, Key>;
  }

  /** A named database of raw bytes (Yjs updates and snapshots). */
  binary(name: DbName): Database<Uint8Array, Key> {
    return this.named(name, 'binary') as Database<Uint8Array, Key>;
  }

  private named(name: DbName, encoding: 'msgpack' | 'binary'): Database<unknown, Key> {
    const existing = this.opened.get(name);
    if (existing !== undefined) return existing;
    const raw = this.raw(name, encoding);
    const db = this.replicating === undefined || LOCAL_ONLY.has(name) ? raw : this.replicating.recorder.wrap(name, raw);
    this.opened.set(name, db);
    return db;
  }

  private readonly rawOpened = new Map<string, Database<unknown, Key>>();

  /** The database itself, writes unrecorded: for the applier of other nodes' writes. */
  private raw(name: DbName, encoding: 'msgpack' | 'binary' = encodingOf(name)): Database<unknown, Key> {
    let db = this.rawOpened.get(name);
    if (db === undefined) {
      const records = JSON_ROWS.has(name) ? { encoder: jsonRows(this.raw(DB.meta)) } : MSGPACK_OPTIONS;
      const options: DatabaseOptions & typeof MSGPACK_OPTIONS & { name: string } = { name, encoding, ...(encoding === 'msgpack' ? records : {}) };
      db = this.root.openDB<unknown, Key>(options);
      this.rawOpened.set(name, db);
    }
    return db;
  }

  /**
   * Cluster mode: applies other nodes' committed writes (in their order) in one LMDB transaction, with `position`
   * written to DB.meta in the same transaction (so a restart resumes after it), then tells the change listeners which
   * databases changed. The writes are not published again.
   */
  async applyReplicated(
    ops: readonly ReplicatedOp[],
    position: { readonly key: string; readonly value: unknown } | ReadonlyArray<{ readonly key: string; readonly value: unknown }>,
    forced?: ReadonlySet<ReplicatedOp>,
  ): Promise<void> {
    const changed = new Set<DbName>();
    const pending = this.replicating?.pending;
    await this.root.transaction(() => {
      for (const op of ops) {
        // Checked here, inside LMDB's single writer, so every local write that ran before is counted. `forced`: ops
        // that win over this node's own pending writes anyway (a newer owner's document writes: ours are fenced off).
        const held = pending !== undefined && forced?.has(op) !== true ? pending : undefined;
        const db = this.raw(op[0]);
        if (isRange(op)) {
          const [name, prefix, from, to, except] = op;
          for (const key of numberedKeys(db, prefix, from, to)) {
            if (held?.holds([name, key]) === true || except?.has(keyId([name, key])) === true) continue;
            void db.remove(key);
          }
        } else if (held?.holds(op) === true) continue;
        else if (op.length === 2) void db.remove(op[1]);
        else void db.put(op[1], op[2]);
        changed.add(op[0]);
      }
      for (const entry of Array.isArray(position) ? position : [position]) void this.raw(DB.meta).put(entry.key, entry.value);
    });
    if (changed.size === 0) return;
    for (const listener of this.changeListeners) {
      try {
        listener(changed);
      } catch (error) {
        // A cache that failed to drop must not stop the applier (it would apply the same batch again and again).
        this.log?.error('a cache could not follow replicated writes', { error });
      }
    }
  }

  /** Cluster mode: this node's own writes reached the stream's applier (in stream order); earlier foreign writes no longer lose to them. */
  ownApplied(ops: readonly ReplicatedOp[]): void {
    this.replicating?.pending.add(ops, -1);
  }

  /** Cluster mode: removes every replicated row (a cache that may hold writes the cluster never acknowledged). */
  async wipeReplicated(): Promise<void> {
    await this.root.transaction(() => {
      for (const name of Object.values(DB)) if (!LOCAL_ONLY.has(name)) void this.raw(name).clearSync();
    });
  }

  /** Cluster mode: every replicated row, database by database in key order, as puts (a checkpoint's image of this store). */
  *replicatedRows(): Generator<KeyOp> {
    for (const name of Object.values(DB)) {
      if (LOCAL_ONLY.has(name)) continue;
      for (const { key, value } of this.raw(name).getRange({})) yield [name, key, value];
    }
  }

  /** Whether any replicated database holds a row. */
  holdsReplicatedRows(): boolean {
    return Object.values(DB).some((name) => !LOCAL_ONLY.has(name) && this.raw(name).getKeysCount({ limit: 1 }) > 0);
  }

  /** Told after other nodes' writes were applied, with the databases they changed (in-memory caches invalidate). */
  onReplicatedChange(listener: ChangeListener): void {
    this.changeListeners.push(listener);
  }

  /** The group commit's hook: the batch's writes go to the cluster before its changes are told they landed. */
  private batchCommitted(failed: boolean): Promise<void> | undefined {
    const replicating = this.replicating;
    const batch = replicating?.batch;
    if (replicating === undefined || batch === undefined) return undefined;
    replicating.batch = undefined;
    if (failed) replicating.pending.add(batch.ops, -1);
    return replicating.outgoing.complete(batch.place, failed ? null : batch.ops);
  }

  /**
   * The one way to write: runs `body` in one LMDB write transaction and resolves once committed and fsynced
   * (docs/durability.md). Everything `body` writes commits together or not at all: if it throws, its writes are
   * rolled back and the promise rejects with that error. Reads inside see the transaction's own writes, and write
   * transactions run one at a time, so check-then-write inside `body` is atomic.
   * Why `childTransaction`: lmdb-js's plain async `transaction()` shares a batch with other callbacks and keeps the
   * writes a callback made before it threw; a child transaction aborts exactly this callback's writes.
   * `body` must be synchronous: an await inside would let other work interleave with an open write.
   */
  transaction<T>(body: (tx: WriteTx) => T): Promise<T> {
    // lmdb-js throws at once, not through the promise, when the database is closed: callers that only attach .catch (a
    // timer's background work) would let that escape as an uncaught exception.
    try {
      return this.begin(body);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private begin<T>(body: (tx: WriteTx) => T): Promise<T> {
    const replicating = this.replicating;
    if (replicating === undefined) return this.writes.childTransaction(() => synchronous(body(TX)));
    const refusal = replicating.refusal();
    if (refusal !== undefined) return Promise.reject(refusal);
    let recorded: { place: number; ops: ReplicatedOp[] } | undefined;
    return this.writes
      .childTransaction(() => {
        const { result, ops } = replicating.recorder.run(() => synchronous(body(TX)));
        recorded = { place: replicating.outgoing.reserve(), ops };
        replicating.pending.add(ops, 1);
        return result;
      })
      .then(
        async (result) => {
          if (recorded !== undefined) await replicating.outgoing.complete(recorded.place, recorded.ops);
          return result;
        },
        (error: unknown) => {
          if (recorded !== undefined) {
            replicating.pending.add(recorded.ops, -1);
            void replicating.outgoing.complete(recorded.place, null);
          }
          throw error;
        },
      );
  }

  /**
   * `transaction` through the group commit (src/store/group-commit.ts), for hot paths: `write` runs later, in its own
   * child transaction inside the one LMDB transaction of the turn, and commits all of its writes or none.
   */
  transactionGrouped(change: GroupedWrite): void {
    const refusal = this.replicating?.refusal();
    if (refusal !== undefined) {
      queueMicrotask(() => change.settle(refusal));
      return;
    }
    this.group.submit(new Grouped(change, this.replicating));
  }

  /**
   * Runs `backfill` (index rows for data written before their index existed) in one transaction, once per data
   * directory: `marker` in DB.meta records it, in the same transaction. A directory that was fresh when opened holds
   * nothing written before (a new cluster node's cache came from writers that index their rows): it is only marked.
   * DB.meta is node-local, so each cluster node backfills its own cache; the rows it writes replicate, idempotently.
   * Answers what `backfill` answered (how many rows it indexed), 0 when it did not run.
   */
  async backfillOnce(marker: string, backfill: () => number): Promise<number> {
    const meta = this.records<unknown>(DB.meta);
    if (meta.get(marker) === true) return 0;
    const fresh = this.foundVersion === undefined;
    return this.transaction(() => {
      meta.putSync(marker, true);
      return fresh ? 0 : backfill();
    });
  }

  /** Cluster mode: this store is a node's cache of the cluster's rows, which may lag other nodes' commits. */
  get replicated(): boolean {
    return this.replicating !== undefined;
  }

  /** Resolves when every commit so far is fsynced to disk (survives power loss). */
  get flushed(): Promise<boolean> {
    return this.root.flushed;
  }

  /** Why the store cannot serve now (undefined when it can): it is closing, or its schema stamp cannot be read. */
  problem(): string | undefined {
    if (this.closing) return 'the store is closing';
    try {
      return stampPresent(this.records<unknown>(DB.meta)) ? undefined : 'the schema stamp is missing';
    } catch (error) {
      return `the store cannot be read: ${(error as Error).message}`;
    }
  }

  /** Lets grouped writes already submitted commit, refuses new ones, then flushes and closes. */
  async close(): Promise<void> {
    this.closing = true;
    this.group.close(new StoreError('the store is closed'));
    await this.group.settled();
    await this.root.flushed;
    await this.root.close();
  }
}

function synchronous<T>(result: T): T {
  if (result instanceof Promise) throw new Error('Store.transaction() bodies must be synchronous');
  return result;
}

function encodingOf(name: DbName): 'msgpack' | 'binary' {
  return name === DB.docUpdates || name === DB.docSnapshots ? 'binary' : 'msgpack';
}

/** The group commit's view of a GroupedWrite: hands it the transaction proof (a class, so no closures per change). */
class Grouped implements GroupedChange {
  readonly single: boolean;
  readonly deferrable: boolean;
  readonly repeatable: boolean;

  constructor(private readonly change: GroupedWrite, private readonly replicating: Replicating | undefined) {
    this.single = change.single === true;
    this.deferrable = change.deferrable === true;
    this.repeatable = change.repeatable === true && replicating === undefined;
  }

  get bounded(): boolean {
    return this.change.bounded === true;
  }

  write(): void {
    const replicating = this.replicating;
    if (replicating === undefined) return this.writeOnce();
    // The batch takes its place in the commit order with its first change (all of a batch's changes run in one turn).
    replicating.batch ??= { place: replicating.outgoing.reserve(), ops: [] };
    const { ops } = replicating.recorder.run(() => this.writeOnce());
    for (const op of ops) replicating.batch.ops.push(op);
    replicating.pending.add(ops, 1);
  }

  private writeOnce(): void {
    if ((this.change.write(TX) as unknown) instanceof Promise) throw new Error('Store.transactionGrouped() writes must be synchronous');
  }

  settle(error: unknown): void {
    this.change.settle(error);
  }
}
