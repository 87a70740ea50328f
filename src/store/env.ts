// Owns the one LMDB environment: opening it, its named databases, the schema-version stamp, transactions and close.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type Key, type RootDatabase } from 'lmdb';
import type { Logger } from '../log.js';
import { GroupCommit } from './group-commit.js';
import { DB, SCHEMA_VERSION, type DbName } from './keys.js';

export class StoreError extends Error {
  override readonly name = 'StoreError';
}

export class Store {
  private readonly opened = new Map<string, Database<unknown, Key>>();
  private closing = false;
  /** The group commit of REST writes (src/store/group-commit.ts); reach it through `atomicallyGrouped` (src/events/outbox.ts). */
  readonly group: GroupCommit;

  private constructor(readonly root: RootDatabase, readonly path: string, log: Pick<Logger, 'error'> | undefined) {
    this.group = new GroupCommit(root, (error) => (log === undefined ? process.emitWarning(String(error)) : log.error('group commit bookkeeping failed', { error })));
  }

  /** Opens (creating if needed) the environment in `path` and checks the schema stamp. */
  static open(path: string, log?: Pick<Logger, 'error'>): Store {
    mkdirSync(path, { recursive: true });
    // A subfolder with no extension: lmdb-js treats a path with an extension as a single file.
    const root = open({ path: join(path, 'db'), maxDbs: 64 });
    const store = new Store(root, path, log);
    store.checkSchema();
    return store;
  }

  private checkSchema(): void {
    const meta = this.records<unknown>(DB.meta);
    const stamped = meta.get('schemaVersion');
    if (stamped === undefined) {
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

  /** A named database of msgpackr-encoded records. */
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
    const db = this.root.openDB<unknown, Key>({ name, encoding });
    this.opened.set(name, db);
    return db;
  }

  /**
   * Runs `body` in one write transaction; resolves once committed (visible, and kept across a process crash).
   * Everything written inside commits together or not at all: if `body` throws, its writes are rolled back.
   * (lmdb-js's plain async `transaction` keeps writes made before a throw; `childTransaction` is the abortable one.)
   */
  transaction<T>(body: () => T): Promise<T> {
    return this.root.childTransaction(body);
  }

  /**
   * Batched write with no rollback, for hot paths whose body cannot throw after its first write
   * (the update log's group commit). Still one LMDB transaction: a crash keeps all of it or none.
   */
  batch<T>(body: () => T): Promise<T> {
    return this.root.transaction(body);
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
