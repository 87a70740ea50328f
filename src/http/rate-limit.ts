// Owns per-client rate limiting of public operations: a token bucket per address, refilled continuously.
import { resourceExhausted } from '../errors.js';

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly refillPerMs: number;

  constructor(private readonly perMinute: number, private readonly now: () => number = Date.now) {
    this.refillPerMs = perMinute / 60_000;
  }

  /** Takes one token for `client` or throws RESOURCE_EXHAUSTED with the seconds until one is free. */
  take(client: string): void {
    const now = this.now();
    const bucket = this.buckets.get(client) ?? { tokens: this.perMinute, updatedAt: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.updatedAt) * this.refillPerMs);
    bucket.updatedAt = now;
    if (bucket.tokens < 1) {
      this.buckets.set(client, bucket);
      throw resourceExhausted('rate limit exceeded for this endpoint; try again later', (1 - bucket.tokens) / this.refillPerMs / 1000);
    }
    bucket.tokens -= 1;
    this.buckets.set(client, bucket);
    if (this.buckets.size > 100_000) this.evictFull(now);
  }

  private evictFull(now: number): void {
    for (const [client, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.updatedAt) * this.refillPerMs >= this.perMinute) this.buckets.delete(client);
    }
  }
}
