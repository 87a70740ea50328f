// Owns access to the DB.directory database: typed point reads, prefix scans, prefix removal and write transactions.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../../store/env.js';
import { DB, KEY_END } from '../../store/keys.js';
import type { DirKey } from './records.js';


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

  /** `Store.transaction`: all of `body`'s writes commit or none; check-then-write inside it is atomic. */
  write<T>(body: (tx: WriteTx) => T): Promise<T> {
    return this.store.transaction(body);
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
      end: [...prefix, KEY_END],
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
    const found = Array.from(this.db.getKeys({ start: prefix, end: [...prefix, KEY_END] }));
    for (const key of found) void this.db.remove(key);
    return found.length;
  }
}
