// Owns reading a long LMDB range a chunk at a time with a turn of the event loop between chunks, and paging matches out of it.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from './env.js';
import { KEY_END } from './keys.js';

/** Rows read between two turns of the event loop: a few ms of decoding, so other tenants' requests wait no longer. */
export const CHUNK_ROWS = 1000;

/** Rows one bounded write transaction changes, where a change of unbounded size is split into several. */
export const WRITE_BATCH = 1000;

/** Lets timers, I/O and other requests run before the caller goes on. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A range as lmdb-js's getRange takes it; `exclusiveStart` applies to its first chunk (later ones always start after). */
export interface KeyRange {
  readonly start: Key;
  readonly end: Key;
  readonly reverse?: boolean;
  readonly exclusiveStart?: boolean;
}

/**
 * Visits the rows of `range` in its order, CHUNK_ROWS at a time with a turn of the event loop between chunks; `visit`
 * answers false to stop. Each chunk starts after where the last one stopped, so a row changed meanwhile is seen once,
 * in its old or its new state, and a row added behind the cursor is not seen. `maxRows` (whole chunks) bounds one
 * call: past it the scan stops and answers the last key read, after which a later call goes on; undefined when the
 * range or `visit` ended it.
 */
export async function scanRange<V>(db: Database<V, Key>, range: KeyRange, visit: (key: Key, value: V) => boolean, maxRows = Infinity): Promise<Key | undefined> {
  let from: Key | undefined;
  let total = 0;
  for (;;) {
    let read = 0;
    for (const { key, value } of db.getRange({ ...range, ...(from === undefined ? {} : { start: from, exclusiveStart: true }), limit: CHUNK_ROWS })) {
      read++;
      from = key;
      if (!visit(key, value)) return undefined;
    }
    total += read;
    if (read < CHUNK_ROWS) return undefined;
    if (total >= maxRows) return from;
    await nextTurn();
  }
}

/** `scanRange` over the rows under `prefix`, in key order, after `after` (exclusive) when given. */
export function scanChunked<V>(db: Database<V, Key>, prefix: readonly Key[], after: Key | undefined, visit: (key: Key, value: V) => boolean, maxRows = Infinity): Promise<Key | undefined> {
  return scanRange(db, { start: after ?? [...prefix], end: [...prefix, KEY_END], exclusiveStart: after !== undefined }, visit, maxRows);
}

/**
 * At most `limit` items, and where the next page starts after: the key of the last item when another match follows,
 * or of the last row examined when `examineAtMost` cut the scan (the page may then be short, even empty).
 */
export interface MatchPage<T> {
  readonly items: T[];
  readonly next?: Key;
}

/**
 * The first `limit` rows under `prefix` after `after` that `pick` turns into an item (undefined: not a match), read by
 * `scanChunked`, at most `examineAtMost` rows of them. The scan stops at the first match past the page, so a caller
 * paging through a range reads it once.
 */
export async function pageMatches<V, T>(db: Database<V, Key>, prefix: readonly Key[], after: Key | undefined, limit: number, pick: (key: Key, value: V) => T | undefined, examineAtMost = Infinity): Promise<MatchPage<T>> {
  const items: T[] = [];
  let last: Key | undefined;
  let more = false;
  const cut = await scanChunked(db, prefix, after, (key, value) => {
    const item = pick(key, value);
    if (item === undefined) return true;
    if (items.length === limit) {
      more = true;
      return false;
    }
    items.push(item);
    last = key;
    return true;
  }, examineAtMost);
  if (more && last !== undefined) return { items, next: last };
  return cut === undefined ? { items } : { items, next: cut };
}

/**
 * Runs `change` on each item, WRITE_BATCH items to a transaction, one transaction after another; answers how many it
 * said it changed. For a change found by a scan outside any transaction: `change` re-reads what it changes.
 */
export async function inWriteBatches<T>(store: Store, items: readonly T[], change: (tx: WriteTx, item: T) => boolean): Promise<number> {
  let changed = 0;
  for (let i = 0; i < items.length; i += WRITE_BATCH) {
    changed += await store.transaction((tx) => items.slice(i, i + WRITE_BATCH).filter((item) => change(tx, item)).length);
  }
  return changed;
}

/** Keys a range removal takes out per transaction: a removal is cheaper than a change, so batches are larger. */
export const REMOVE_BATCH = 5000;

/** What `removeRangeInBatches` needs of a database (records or binary). */
export type RangeHolder = Pick<Database<unknown, Key>, 'getKeys' | 'removeSync'>;

/**
 * Removes every key under `prefix` in each database, at most REMOVE_BATCH keys to a transaction (shared by the
 * databases: a small range, one document's, is one transaction), one transaction after another; answers how many
 * went. Each batch reads the ranges afresh inside its transaction, so a row written under the prefix before the last
 * batch goes too. Between batches a reader sees the ranges partly removed.
 */
export async function removeRangeInBatches(store: Store, databases: readonly RangeHolder[], prefix: readonly Key[]): Promise<number> {
  const range = { start: [...prefix], end: [...prefix, KEY_END] };
  let removed = 0;
  for (;;) {
    // Fewer than asked means every range is exhausted: each database was asked for all the batch had left.
    const taken = await store.transaction(() => {
      let count = 0;
      for (const db of databases) {
        if (count === REMOVE_BATCH) break;
        const keys = Array.from(db.getKeys({ ...range, limit: REMOVE_BATCH - count }));
        for (const key of keys) db.removeSync(key);
        count += keys.length;
      }
      return count;
    });
    removed += taken;
    if (taken < REMOVE_BATCH) return removed;
  }
}
