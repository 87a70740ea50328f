// Owns access to the DB.directory database: typed point reads, prefix scans, prefix removal and write transactions.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../../store/env.js';
import { REMOVE_BATCH } from '../../store/chunked-scan.js';
import { DB, KEY_END } from '../../store/keys.js';
import type { DirKey } from './records.js';


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
