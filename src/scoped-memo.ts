// Owns a memo that lives for one synchronous scope (a planning transaction): made on entry, dropped on exit, shared by nested calls.

/**
 * What a reader may keep between its reads while nothing else can write what it reads: inside one synchronous write
 * transaction (LMDB has one writer and the body does not yield). Outside `run`, `current` is undefined and readers go
 * to the store.
 */
export class ScopedMemo<K, V> {
  private map: Map<K, V> | undefined;

  /** The memo of the scope running now, if any. */
  get current(): Map<K, V> | undefined {
    return this.map;
  }

  /** Runs `body` (synchronous) with a fresh memo; a nested call runs inside the outer one's. */
  run<T>(body: () => T): T {
    if (this.map !== undefined) return body();
    this.map = new Map();
    try {
      return body();
    } finally {
      this.map = undefined;
    }
  }
}
