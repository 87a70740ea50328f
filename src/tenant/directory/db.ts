// Owns access to the DB.directory database: typed point reads, prefix scans, prefix removal and write transactions.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../../store/env.js';
import { REMOVE_BATCH, WRITE_BATCH } from '../../store/chunked-scan.js';
import { DB, KEY_END } from '../../store/keys.js';
import type { DirKey } from './records.js';

/**
 * Items one write of a bulk directory operation changes (`DirectoryDb.writeEach`). An item is a few rows (a document
 * 3 and each grant on it 2, a user's profile and grant 3, a grant on a document it registers 6), so about WRITE_BATCH
 * rows (src/store/chunked-scan.ts). One write for a call's 1,000 items held every workspace's writes for 6–45 ms
 * (bench/README.md, "Twenty-third session: a folder's documents in bounded writes" and "Twenty-fourth session: bulk
 * directory operations in bounded writes").
 */
export const ITEMS_PER_WRITE = Math.floor(WRITE_BATCH / 5);

export interface ScanOptions {
  /** Start strictly after this full key (a page cursor). */
  readonly after?: DirKey;
  readonly limit?: number;
}

/** Told after a write commits: the organizations it touched per API key (`undefined` among them: every organization). */
export type DirectoryChangeListener = (apiKey: string, organizationIds: ReadonlySet<string | undefined>) => void;

export class DirectoryDb {
  private readonly db: Database<unknown, Key>;
  /** The organizations the write running now touches, by API key; set only while a `write` body runs. */
  private touched: Map<string, Set<string | undefined>> | undefined;
  private readonly listeners: DirectoryChangeListener[] = [];

  constructor(private readonly store: Store) {
    this.db = store.records<unknown>(DB.directory);
  }

  /** Registers a listener told after every committed write (open sockets re-check their access with it). */
  onChange(listener: DirectoryChangeListener): void {
    this.listeners.push(listener);
  }

  /**
   * `Store.transaction`: all of `body`'s writes commit or none; check-then-write inside it is atomic. Once it has
   * committed, the change listeners are told which organizations it touched.
   */
  write<T>(body: (tx: WriteTx) => T): Promise<T> {
    const touched = new Map<string, Set<string | undefined>>();
    const committed = this.store.transaction((tx) => {
      this.touched = touched;
      try {
        return body(tx);
      } finally {
        this.touched = undefined;
      }
    });
    return committed.then((result) => {
      this.tell(touched);
      return result;
    });
  }

  /**
   * Runs `change` on each item, ITEMS_PER_WRITE items to a committed write, one write after another (as
   * `inWriteBatches` does for the store's other rows); answers how many items `change` said it changed (returned true;
   * a step that reports per item, through BulkResults, returns nothing). `change`
   * re-reads what it changes: the items were found outside the write. `prepare` runs first in every write (checks
   * and registrations the items rely on: what an earlier write found may be gone by the next); with it there is a
   * write even for no items. A crash part-way leaves the earlier writes done.
   */
  async writeEach<T>(items: readonly T[], change: (item: T) => boolean | void, prepare?: () => void): Promise<number> {
    if (items.length === 0 && prepare === undefined) return 0;
    let changed = 0;
    let at = 0;
    do {
      const batch = items.slice(at, at + ITEMS_PER_WRITE);
      changed += await this.write(() => {
        prepare?.();
        return batch.filter((item) => change(item) === true).length;
      });
      at += ITEMS_PER_WRITE;
    } while (at < items.length);
    return changed;
  }

  /** Every key is [apiKey, kind, organizationId, ...] (src/tenant/directory/records.ts); a shorter one spans organizations. */
  private touch(key: DirKey): void {
    const [apiKey, , organizationId] = key;
    if (this.touched === undefined || typeof apiKey !== 'string') return;
    let organizations = this.touched.get(apiKey);
    if (organizations === undefined) this.touched.set(apiKey, (organizations = new Set()));
    organizations.add(typeof organizationId === 'string' ? organizationId : undefined);
  }

  private tell(touched: ReadonlyMap<string, ReadonlySet<string | undefined>>): void {
    for (const [apiKey, organizations] of touched) {
      for (const listener of this.listeners) {
        try {
          listener(apiKey, organizations);
        } catch (error) {
          // A listener's failure must not turn a committed write into a failed request.
          process.emitWarning(`directory change listener failed: ${String(error)}`);
        }
      }
    }
  }

  get<T>(key: DirKey): T | undefined {
    return this.db.get(key) as T | undefined;
  }

  has(key: DirKey): boolean {
    return this.db.doesExist(key);
  }

  /** Only inside `write`. */
  put(key: DirKey, value: unknown): void {
    this.touch(key);
    void this.db.put(key, value);
  }

  /** Only inside `write`. */
  remove(key: DirKey): void {
    this.touch(key);
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

  /**
   * Keys under `prefix` in key order from `start` (inclusive, or strictly after it with `exclusive`), read lazily as
   * the caller iterates: for merging several ranges (src/store/merged-scan.ts), which closes it when it stops early.
   */
  *keysFrom(prefix: DirKey, start?: { key: DirKey; exclusive: boolean }): Generator<DirKey> {
    const range = this.db.getKeys({
      start: start?.key ?? prefix,
      end: [...prefix, KEY_END],
      ...(start?.exclusive === true ? { exclusiveStart: true } : {}),
    });
    for (const key of range) yield key as DirKey;
  }

  /** The last element of each key under `prefix` (the id the prefix lists). */
  lastElements(prefix: DirKey, options: ScanOptions = {}): string[] {
    return this.scan<unknown>(prefix, options).map(({ key }) => String(key[key.length - 1]));
  }

  /**
   * Removes every entry under `prefix`, REMOVE_BATCH to a committed write, until none is left (not inside `write`):
   * for ranges too large for one transaction on the event loop. Between batches a reader sees the range partly gone.
   */
  async removePrefixInBatches(prefix: DirKey): Promise<number> {
    let removed = 0;
    for (;;) {
      const taken = await this.write(() => {
        this.touch(prefix);
        const found = Array.from(this.db.getKeys({ start: prefix, end: [...prefix, KEY_END], limit: REMOVE_BATCH }));
        for (const key of found) void this.db.remove(key);
        return found.length;
      });
      removed += taken;
      if (taken < REMOVE_BATCH) return removed;
    }
  }

  /** Removes every entry under `prefix`; only inside `write`. Returns how many were removed. */
  removePrefix(prefix: DirKey): number {
    this.touch(prefix);
    // Collected first: removing while a cursor walks the same range would skip entries.
    const found = Array.from(this.db.getKeys({ start: prefix, end: [...prefix, KEY_END] }));
    for (const key of found) void this.db.remove(key);
    return found.length;
  }
}
