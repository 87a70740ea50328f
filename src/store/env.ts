// Owns the one LMDB environment: opening it, its named databases, the schema-version stamp, the one way to write, and close.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type DatabaseOptions, type Key, type RootDatabase } from 'lmdb';
import type { Logger } from '../log.js';
import { GroupCommit, type GroupedChange, type TransactionRoot } from './group-commit.js';
import { DB, READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, type DbName } from './keys.js';

/**
 * Proof that code runs inside an all-or-nothing write transaction. Only `Store.transaction` and
 * `Store.transactionGrouped` make one, so a function that takes a `WriteTx` (Outbox.append, the snapshot writes)
 * cannot be called where its writes could commit apart from the change they belong to.
 */
export interface WriteTx {
  readonly brand: 'WriteTx';
}

const TX: WriteTx = Object.freeze({ brand: 'WriteTx' });

/** msgpackr options lmdb-js passes on to its encoder (its typings leave them out). */
interface MsgpackOptions {
  readonly useRecords?: boolean;
  readonly mapsAsObjects?: boolean;
}

/** Plain msgpack maps, decoded as plain objects (see `Store.records`). */
const MSGPACK_OPTIONS: MsgpackOptions = { useRecords: false, mapsAsObjects: true };

/** A change for `Store.transactionGrouped`. */
export interface GroupedWrite {
  /** Synchronous writes, committed all together or not at all; `single`: exactly one put or remove. */
  write(tx: WriteTx): void;
  readonly single?: boolean;
  /** Told once: undefined when committed, else the error (at once, inside the batch, when `write` throws). */
  settle(error: unknown): void;
}

export interface StoreOptions {
  readonly log?: Pick<Logger, 'error'>;
  /** Tests only: wraps the two lmdb-js transaction calls every write goes through, to make a commit fail. */
  readonly transactions?: (root: RootDatabase) => TransactionRoot;
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

  private constructor(private readonly root: RootDatabase, readonly path: string, options: StoreOptions) {
    const log = options.log;
    this.writes = options.transactions?.(root) ?? root;
    this.group = new GroupCommit(this.writes, (error) => (log === undefined ? process.emitWarning(String(error)) : log.error('group commit bookkeeping failed', { error })));
  }

  /** Opens (creating if needed) the environment in `path` and checks the schema stamp. */
  static open(path: string, options: StoreOptions = {}): Store {
    mkdirSync(path, { recursive: true });
    // A subfolder with no extension: lmdb-js treats a path with an extension as a single file.
    const root = open({ path: join(path, 'db'), maxDbs: 64 });
    const store = new Store(root, path, options);
    store.checkSchema();
    return store;
  }

  private checkSchema(): void {
    const meta = this.records<unknown>(DB.meta);
    const stamped = meta.get('schemaVersion');
    if (stamped === undefined || (typeof stamped === 'number' && READABLE_SCHEMA_VERSIONS.includes(stamped))) {
      meta.putSync('schemaVersion', SCHEMA_VERSION);
      return;
    }
    if (stamped !== SCHEMA_VERSION) {
      throw new StoreError(
        `data directory ${this.path} has schema version ${String(stamped)}, this server reads version ${SCHEMA_VERSION}; ` +
          'use a matching server version or a fresh DATA_DIR',
      );
    }
  }

  /**
   * A named database of msgpackr-encoded records, written as plain msgpack maps (`useRecords: false`). msgpackr's
   * default inline record definitions cost twice as much to encode and decode here (no shared structures), and were a
   * top frame of every REST write (bench/README.md, "REST comment writes"); records written that way still decode.
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
    const options: DatabaseOptions & MsgpackOptions & { name: string } = { name, encoding, ...(encoding === 'msgpack' ? MSGPACK_OPTIONS : {}) };
    const db = this.root.openDB<unknown, Key>(options);
    this.opened.set(name, db);
    return db;
  }

  /**
   * The one way to write: runs `body` in one LMDB write transaction and resolves once committed (visible, and kept
   * across a process crash). Everything `body` writes commits together or not at all: if it throws, its writes are
   * rolled back and the promise rejects with that error. Reads inside see the transaction's own writes, and write
   * transactions run one at a time, so check-then-write inside `body` is atomic.
   * Why `childTransaction`: lmdb-js's plain async `transaction()` shares a batch with other callbacks and keeps the
   * writes a callback made before it threw; a child transaction aborts exactly this callback's writes.
   * `body` must be synchronous: an await inside would let other work interleave with an open write.
   */
  transaction<T>(body: (tx: WriteTx) => T): Promise<T> {
    return this.writes.childTransaction(() => {
      const result = body(TX);
      if (result instanceof Promise) throw new Error('Store.transaction() bodies must be synchronous');
      return result;
    });
  }

  /**
   * `transaction` through the group commit (src/store/group-commit.ts), for hot paths: `write` runs later, in its own
   * child transaction inside the one LMDB transaction of the turn, and commits all of its writes or none.
   */
  transactionGrouped(change: GroupedWrite): void {
    this.group.submit(new Grouped(change));
  }

  /** Resolves when every commit so far is fsynced to disk (survives power loss). */
  get flushed(): Promise<boolean> {
    return this.root.flushed;
  }

  /** Why the store cannot serve now (undefined when it can): it is closing, or its schema stamp cannot be read. */
  problem(): string | undefined {
    if (this.closing) return 'the store is closing';
    try {
      return this.records<unknown>(DB.meta).get('schemaVersion') === SCHEMA_VERSION ? undefined : 'the schema stamp is missing';
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

/** The group commit's view of a GroupedWrite: hands it the transaction proof (a class, so no closures per change). */
class Grouped implements GroupedChange {
  readonly single: boolean;

  constructor(private readonly change: GroupedWrite) {
    this.single = change.single === true;
  }

  write(): void {
    if ((this.change.write(TX) as unknown) instanceof Promise) throw new Error('Store.transactionGrouped() writes must be synchronous');
  }

  settle(error: unknown): void {
    this.change.settle(error);
  }
}
