// Owns rate limiting: a token bucket per key (client address, target email, API key), refilled continuously, in bounded memory.
import { ByteBudget } from '../byte-budget.js';
import { resourceExhausted } from '../errors.js';
import { TokenBuckets, type SharedUsage } from '../token-buckets.js';

export interface RateLimitOptions {
  /** Requests allowed per window; also the burst size. 0 turns the limiter off. */
  readonly limit: number;
  readonly windowMs: number;
  /** Most keys remembered at once; past it the least recently used key is forgotten. */
  readonly maxKeys: number;
  /** What the limit is about, for the error message ("client address", "email address", "API key"). */
  readonly subject: string;
  readonly now?: () => number;
}

/** One bucket of `limit` requests per key, refilled over `windowMs` (src/token-buckets.ts: bounded memory). */
export class RateLimiter {
  private readonly buckets: TokenBuckets;
  private readonly refillPerMs: number;

  constructor(private readonly options: RateLimitOptions) {
    this.refillPerMs = options.limit / options.windowMs;
    this.buckets = new TokenBuckets({ capacity: options.limit, refillPerMs: this.refillPerMs, maxKeys: options.maxKeys, now: options.now ?? Date.now });
  }

  get enabled(): boolean {
    return this.options.limit > 0;
  }

  /** Keys remembered now (bounded by maxKeys). */
  get size(): number {
    return this.buckets.size;
  }

  /** Cluster mode: this limit's usage, shared with the other nodes (src/cluster/shared-limits.ts). */
  share(): SharedUsage {
    return this.buckets.share();
  }

  /** Takes one token for `key`: 0 when taken (or the limit is off), else the seconds until one is free. Never throws. */
  tryTake(key: string): number {
    if (this.options.limit <= 0) return 0;
    const lacking = this.buckets.take(key, 1);
    // At least a millisecond: at 10 tokens a millisecond a fraction of a token rounds to no wait, yet it is a refusal.
    return lacking === 0 ? 0 : Math.max(0.001, Math.round(lacking / this.refillPerMs) / 1000);
  }

  /** Takes one token for `key` or throws RESOURCE_EXHAUSTED with the seconds until one is free. */
  take(key: string): void {
    const { limit } = this.options;
    if (limit <= 0) return;
    const lacking = this.buckets.take(key, 1);
    if (lacking === 0) return;
    throw resourceExhausted(
      `rate limit exceeded for this ${this.options.subject} (${limit} requests per ${describeWindow(this.options.windowMs)}); try again later`,
      // Whole milliseconds first: float noise must not turn 1800 s into a Retry-After of 1801.
      Math.round(lacking / this.refillPerMs) / 1000,
    );
  }
}

function describeWindow(ms: number): string {
  if (ms === 3_600_000) return 'hour';
  if (ms === 60_000) return 'minute';
  return `${ms / 1000} s`;
}

/** The limiters of the REST surface, one per kind of key (docs/abuse-protection.md). */
export interface RateLimits {
  /** Public operations, per client address (IPv6 per /64). */
  readonly client: RateLimiter;
  /** Public operations that send mail to an address (create, send-login-link), per target address. */
  readonly emailSend: RateLimiter;
  /** Get Email Verification Status, per target address (consoles poll it). */
  readonly emailStatus: RateLimiter;
  /** Every authenticated operation, per API key or per workspace. */
  readonly credential: RateLimiter;
  /** Bytes per API key (or workspace), REST bodies and sync frames together: the sync endpoint charges the same budget. */
  readonly bytes: ByteBudget;
  /** Sync messages (type 0) per API key, over all its connections (API_KEY_SYNC_MESSAGES_PER_SECOND). */
  readonly syncMessages: RateLimiter;
}

export interface RateLimitConfig {
  readonly publicRateLimitPerMinute: number;
  readonly emailRateLimitPerHour: number;
  readonly emailStatusRateLimitPerMinute: number;
  readonly apiKeyRateLimitPerMinute: number;
  readonly apiKeyBytesPerSecond: number;
  readonly apiKeySyncMessagesPerSecond: number;
  readonly maxBodyBytes: number;
  readonly wsMaxPayloadBytes: number;
  readonly rateLimitMaxKeys: number;
}

export function rateLimits(config: RateLimitConfig, now: () => number = Date.now): RateLimits {
  const maxKeys = config.rateLimitMaxKeys;
  return {
    client: new RateLimiter({ limit: config.publicRateLimitPerMinute, windowMs: 60_000, maxKeys, subject: 'client address', now }),
    emailSend: new RateLimiter({ limit: config.emailRateLimitPerHour, windowMs: 3_600_000, maxKeys, subject: 'email address', now }),
    emailStatus: new RateLimiter({ limit: config.emailStatusRateLimitPerMinute, windowMs: 60_000, maxKeys, subject: 'email address', now }),
    credential: new RateLimiter({ limit: config.apiKeyRateLimitPerMinute, windowMs: 60_000, maxKeys, subject: 'API key', now }),
    bytes: new ByteBudget({ bytesPerSecond: config.apiKeyBytesPerSecond, largestCharge: Math.max(config.maxBodyBytes, config.wsMaxPayloadBytes), maxKeys, now }),
    // Bursts of 2 seconds' worth: a reconnecting workspace's clients resync at once, and a burst is that many applies.
    syncMessages: new RateLimiter({ limit: 2 * config.apiKeySyncMessagesPerSecond, windowMs: 2_000, maxKeys, subject: 'API key', now }),
  };
}
