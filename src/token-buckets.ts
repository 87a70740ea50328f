// Owns token buckets per key in bounded memory: refilled continuously, kept in a Map used as an LRU list (the rate limits and the byte budgets).

export interface TokenBucketOptions {
  /** Tokens a full bucket holds (the burst); a key not seen before starts full. */
  readonly capacity: number;
  readonly refillPerMs: number;
  /** Most keys remembered at once; past it the least recently used key is forgotten. */
  readonly maxKeys: number;
  readonly now: () => number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * A touched key is moved to the end of the Map, so memory never exceeds `maxKeys` buckets whatever the number of
 * distinct keys. Forgetting the least recently used key is safe: a key not seen for a while has mostly refilled; a
 * flood of fresh keys only forgets keys that went quiet.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly options: TokenBucketOptions) {
    if (options.maxKeys < 1) throw new Error('token buckets need room for at least one key');
  }

  /** Keys remembered now (bounded by maxKeys). */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes `cost` tokens from `key`'s bucket, or none: 0 when taken, else how many tokens it lacks. */
  take(key: string, cost: number): number {
    const { capacity, refillPerMs } = this.options;
    const now = this.options.now();
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: capacity, updatedAt: now };
      if (this.buckets.size >= this.options.maxKeys) this.forgetOldest();
    } else {
      this.buckets.delete(key);
      bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.updatedAt) * refillPerMs);
      bucket.updatedAt = now;
    }
    this.buckets.set(key, bucket);
    if (bucket.tokens < cost) return cost - bucket.tokens;
    bucket.tokens -= cost;
    return 0;
  }

  private forgetOldest(): void {
    for (const key of this.buckets.keys()) {
      this.buckets.delete(key);
      return;
    }
  }
}
