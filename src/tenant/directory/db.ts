// Owns access to the DB.directory database: typed point reads, prefix scans, prefix removal and write transactions.
import type { Database, Key } from 'lmdb';
import type { Store } from '../../store/env.js';
import { DB } from '../../store/keys.js';
import type { DirKey } from './records.js';

/** Sorts after every ordered-binary key element, so [...prefix, END] bounds a prefix scan. */
const END = Buffer.from([0xff]);

export interface ScanOptions {
  /** Start strictly after this full key (a page cursor). */
  readonly after?: DirKey;
  readonly limit?: number;
}

export class DirectoryDb {
  private readonly db: Database<unknown, Key>;

  constructor(private readonly store: Store) {
    this.db = store.records<unknown>(DB.directory);
  }

  /**
   * Runs `body` in one LMDB write transaction and resolves after commit. Reads inside see the transaction's
   * own writes, and transactions run one at a time, so check-then-write inside `body` is atomic.
   * A child transaction, because lmdb-js rolls back a throwing callback only in a child transaction: with
   * `Store.transaction` the writes made before the throw would still commit.
   */
  write<T>(body: () => T): Promise<T> {
    return this.store.root.childTransaction(body);
  }

  get<T>(key: DirKey): T | undefined {
    return this.db.get(key) as T | undefined;
  }

  has(key: DirKey): boolean {
    return this.db.doesExist(key);
  }

  /** Only inside `write`. */
  put(key: DirKey, value: unknown): void {
    void this.db.put(key, value);
  }

  /** Only inside `write`. */
  remove(key: DirKey): void {
    void this.db.remove(key);
  }

  /** Entries whose key starts with `prefix`, in key order. */
  scan<T>(prefix: DirKey, options: ScanOptions = {}): Array<{ key: DirKey; value: T }> {
    const range = this.db.getRange({
      start: options.after ?? prefix,
      end: [...prefix, END],
      ...(options.after === undefined ? {} : { exclusiveStart: true }),
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    });
    return Array.from(range, ({ key, value }) => ({ key: key as DirKey, value: value as T }));
  }

  /** The last element of each key under `prefix` (the id the prefix lists). */
  lastElements(prefix: DirKey, options: ScanOptions = {}): string[] {
    return this.scan<unknown>(prefix, options).map(({ key }) => String(key[key.length - 1]));
  }

  /** Removes every entry under `prefix`; only inside `write`. Returns how many were removed. */
  removePrefix(prefix: DirKey): number {
    // Collected first: removing while a cursor walks the same range would skip entries.
    const found = Array.from(this.db.getKeys({ start: prefix, end: [...prefix, END] }));
    for (const key of found) void this.db.remove(key);
    return found.length;
  }
}
