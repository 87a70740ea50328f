// Owns reading how many rows a named database holds from LMDB's own statistics: no scan, whatever the count.
import type { Database, Key } from 'lmdb';

/** lmdb-js's getStats() answers mdb_stat's figures (its typings say `{}`); `entryCount` is the database's rows. */
interface DatabaseStats {
  readonly entryCount?: unknown;
}

/**
 * The rows of `db` in the snapshot this process reads (inside a write transaction: with its writes). LMDB keeps the
 * count in the database's root record, so this costs the same at ten rows as at ten million: what a scrape may read
 * (docs/observability.md) where a range count would walk a backlog that is large exactly when it matters.
 */
export function rowCount<V>(db: Database<V, Key>): number {
  const stats: DatabaseStats = db.getStats();
  return typeof stats.entryCount === 'number' ? stats.entryCount : 0;
}
