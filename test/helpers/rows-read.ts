// Test helper: counts the rows a database's range reads hand out (how far a page walked), by wrapping its getRange.
import type { Database, Key } from 'lmdb';

/** From now on every row `db.getRange` yields is counted; `reset` starts the count again. */
export function countRowsRead<V>(db: Database<V, Key>): { readonly count: number; reset(): void } {
  let count = 0;
  const getRange = db.getRange.bind(db);
  db.getRange = (options) =>
    getRange(options).map((row) => {
      count++;
      return row;
    });
  return {
    get count() {
      return count;
    },
    reset: () => {
      count = 0;
    },
  };
}
