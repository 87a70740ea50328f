// Owns the permission provider's cached answers: a least-recently-used cache over every API key, each key held to a share.

/** A cached answer: what it is and until when it holds (ms since epoch). */
export interface CachedAnswer<V> {
  readonly value: V;
  readonly until: number;
}

interface Entry<V> extends CachedAnswer<V> {
  readonly apiKey: string;
}

/**
 * One process's answers for every workspace. A workspace whose provider answers many (user, document) pairs would,
 * in one shared order, push every other workspace's answers out, and their sync upgrades would ask their providers
 * again; so each API key holds at most `perKey` answers and, at its share, loses its own oldest first. Past `entries`
 * in all, the least recently used answer goes, whoever's it is (as src/doc/loaded-budget.ts does for documents). Every
 * operation is O(1) but `forget`, which is O(the key's answers).
 */
export class AnswerCache<V> {
  /** Every answer, least recently used first (a Map iterates in insertion order; a hit re-inserts). */
  private readonly recent = new Map<string, Entry<V>>();
  /** Each key's answers, in the same order. */
  private readonly keys = new Map<string, Map<string, Entry<V>>>();

  constructor(readonly entries: number, readonly perKey: number) {}

  get size(): number {
    return this.recent.size;
  }

  /** How many answers `apiKey` holds (tests, figures). */
  sizeOf(apiKey: string): number {
    return this.keys.get(apiKey)?.size ?? 0;
  }

  /** The answer while it holds at `now` (it becomes the most recently used); undefined when absent or lapsed. */
  get(cacheKey: string, now: number): CachedAnswer<V> | undefined {
    const entry = this.recent.get(cacheKey);
    if (entry === undefined) return undefined;
    this.delete(cacheKey, entry);
    if (entry.until <= now) return undefined;
    this.insert(cacheKey, entry);
    return entry;
  }

  set(apiKey: string, cacheKey: string, value: V, until: number): void {
    const old = this.recent.get(cacheKey);
    if (old !== undefined) this.delete(cacheKey, old);
    const own = this.keys.get(apiKey);
    if (own !== undefined && own.size >= this.perKey) this.evictFirst(own);
    else if (this.recent.size >= this.entries) this.evictFirst(this.recent);
    this.insert(cacheKey, { apiKey, value, until });
  }

  /** Drops every answer of `apiKey` (its provider config changed). */
  forget(apiKey: string): void {
    const own = this.keys.get(apiKey);
    if (own === undefined) return;
    for (const cacheKey of own.keys()) this.recent.delete(cacheKey);
    this.keys.delete(apiKey);
  }

  clear(): void {
    this.recent.clear();
    this.keys.clear();
  }

  private evictFirst(order: Map<string, Entry<V>>): void {
    const first = order.entries().next();
    if (first.done !== true) this.delete(first.value[0], first.value[1]);
  }

  private insert(cacheKey: string, entry: Entry<V>): void {
    this.recent.set(cacheKey, entry);
    let own = this.keys.get(entry.apiKey);
    if (own === undefined) this.keys.set(entry.apiKey, (own = new Map()));
    own.set(cacheKey, entry);
  }

  private delete(cacheKey: string, entry: Entry<V>): void {
    this.recent.delete(cacheKey);
    const own = this.keys.get(entry.apiKey);
    if (own === undefined) return;
    own.delete(cacheKey);
    if (own.size === 0) this.keys.delete(entry.apiKey);
  }
}
