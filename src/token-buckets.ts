// Owns token buckets per key in bounded memory: refilled continuously, kept in a Map used as an LRU list (the rate limits and the byte budgets).

export interface TokenBucketOptions {
  /** Tokens a full bucket holds (the burst); a key not seen before starts full. */
  readonly capacity: number;
  readonly refillPerMs: number;
  /** Most keys remembered at once; past it the least recently used key is forgotten. */
  readonly maxKeys: number;
  readonly now: () => number;
  /** How far below empty `spend` may take a bucket (default: one full bucket). */
  readonly maxDebt?: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * What a cluster shares of one set of buckets (src/cluster/shared-limits.ts), so a key's limit holds over all nodes,
 * not once per node: what was taken here since the last look, and what other nodes took.
 */
export interface SharedUsage {
  /** Tokens taken here since the last call, by key; forgets them. */
  takenSince(): Array<[string, number]>;
  /** `amount` tokens another node took for `key`: taken here too, down to a debt of one full bucket at most. */
  takenElsewhere(key: string, amount: number): void;
}

/**
 * A touched key is moved to the end of the Map, so memory never exceeds `maxKeys` buckets whatever the number of
 * distinct keys. Forgetting the least recently used key is safe: a key not seen for a while has mostly refilled; a
 * flood of fresh keys only forgets keys that went quiet.
 */
export class TokenBuckets implements SharedUsage {
  private readonly buckets = new Map<string, Bucket>();
  /**
   * The key touched last and its bucket: already at the Map's LRU end, so touching it again needs no Map operation.
   * One API key's frames come many in a row (a workspace's sync traffic), and each frame is checked by three sets of
   * buckets; the Map's delete and set were most of a check's cost (bench/README.md, "Twenty-first session").
   */
  private lastKey: string | undefined;
  private lastBucket: Bucket | undefined;
  /** Cluster mode only (`share`): tokens taken here by key since the last `takenSince`, at most maxKeys keys. */
  private taken: Map<string, number> | undefined;

  constructor(private readonly options: TokenBucketOptions) {
    if (options.maxKeys < 1) throw new Error('token buckets need room for at least one key');
  }

  /** Keys remembered now (bounded by maxKeys). */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes `cost` tokens from `key`'s bucket, or none: 0 when taken, else how many tokens it lacks. */
  take(key: string, cost: number): number {
    const bucket = this.touch(key);
    if (bucket.tokens < cost) return cost - bucket.tokens;
    bucket.tokens -= cost;
    const taken = this.taken;
    // A flood of distinct keys (client addresses) past maxKeys in one interval is shared in part: each node still
    // holds them to its own buckets.
    if (taken !== undefined && (taken.size < this.options.maxKeys || taken.has(key))) taken.set(key, (taken.get(key) ?? 0) + cost);
    return 0;
  }

  /** From now on what is taken here is kept for `takenSince` (cluster mode); a single process keeps nothing. */
  share(): SharedUsage {
    this.taken ??= new Map();
    return this;
  }

  takenSince(): Array<[string, number]> {
    const taken = this.taken;
    if (taken === undefined || taken.size === 0) return [];
    this.taken = new Map();
    return [...taken];
  }

  takenElsewhere(key: string, amount: number): void {
    // A debt, not a floor at zero: else each node would refill and spend its own rate and N nodes would let N rates
    // through. At most one bucket, so a node that heard of a burst elsewhere is back in service within a refill.
    this.spend(key, amount);
  }

  /** Takes `amount` whatever is left, into debt down to `maxDebt` (a cost known only once paid: CPU time); `now`: the clock, when just read. */
  spend(key: string, amount: number, now?: number): void {
    const bucket = this.touch(key, now);
    bucket.tokens = Math.max(-(this.options.maxDebt ?? this.options.capacity), bucket.tokens - amount);
  }

  /** Whether `key`'s bucket holds anything now (after its refill). */
  hasAny(key: string): boolean {
    // A refill only adds: a bucket that held tokens when last touched holds them now, without reading the clock. The
    // key touched last is at the LRU end already, so skipping the touch changes no order either.
    if (key === this.lastKey && (this.lastBucket as Bucket).tokens > 0) return true;
    return this.touch(key).tokens > 0;
  }

  /** `key`'s bucket refilled to `now`, moved to the LRU end (made full, forgetting the oldest key, when new). */
  private touch(key: string, now = this.options.now()): Bucket {
    const { capacity, refillPerMs } = this.options;
    const last = key === this.lastKey;
    let bucket = last ? this.lastBucket : this.buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: capacity, updatedAt: now };
      if (this.buckets.size >= this.options.maxKeys) this.forgetOldest();
      this.buckets.set(key, bucket);
    } else {
      if (!last) {
        this.buckets.delete(key);
        this.buckets.set(key, bucket);
      }
      bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.updatedAt) * refillPerMs);
      bucket.updatedAt = now;
    }
    this.lastKey = key;
    this.lastBucket = bucket;
    return bucket;
  }

  private forgetOldest(): void {
    for (const key of this.buckets.keys()) {
      this.buckets.delete(key);
      return;
    }
  }
}
