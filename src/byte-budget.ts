// Owns per-key byte budgets: a token bucket per key (API key), refilled continuously, in bounded memory (REST and sync input, awareness fan-out).
import { TokenBuckets, type SharedUsage } from './token-buckets.js';

export interface ByteBudgetOptions {
  /** Bytes per second per key; 0 turns the budget off. */
  readonly bytesPerSecond: number;
  /** The largest single charge the other limits let through (WS_MAX_PAYLOAD_BYTES, MAX_BODY_BYTES): the bucket holds at least that. */
  readonly largestCharge: number;
  /** Most keys remembered at once; past it the least recently charged key is forgotten. */
  readonly maxKeys: number;
  readonly now?: () => number;
}

/** A key may spend this many seconds' worth of its rate at once (the bucket's size). */
export const BYTE_BURST_SECONDS = 8;

/**
 * One bucket per API key, refilled at `bytesPerSecond` up to BYTE_BURST_SECONDS' worth, and never less than the
 * largest frame or body the other limits accept, so every one of them passes on a rested key. A charge the bucket
 * cannot cover takes nothing and says how long until it could: small frames (a cursor, a keystroke) of the same key
 * still pass while a large one waits, and the key's other users are not shut out by one large paste. Why bytes: what
 * one workspace's input costs every other (parsing, validation, a Yjs apply, the LMDB write, the snapshot it leads
 * to) grows with its size, and the request rate limit counts a 1 MiB body as one (bench/README.md, "Noisy neighbours,
 * probed from outside"). The buckets are the rate limits' (src/token-buckets.ts), so memory stays bounded: a forgotten
 * key comes back rested, which a key not charged for a while mostly is.
 */
export class ByteBudget {
  private readonly buckets: TokenBuckets;
  private readonly perMs: number;

  constructor(private readonly options: ByteBudgetOptions) {
    this.perMs = options.bytesPerSecond / 1000;
    const capacity = Math.max(options.bytesPerSecond * BYTE_BURST_SECONDS, options.largestCharge);
    this.buckets = new TokenBuckets({ capacity, refillPerMs: this.perMs, maxKeys: options.maxKeys, now: options.now ?? Date.now });
  }

  get enabled(): boolean {
    return this.options.bytesPerSecond > 0;
  }

  get bytesPerSecond(): number {
    return this.options.bytesPerSecond;
  }

  /** Cluster mode: this budget's usage, shared with the other nodes (src/cluster/shared-limits.ts). */
  share(): SharedUsage {
    return this.buckets.share();
  }

  /** Charges `bytes` to `key`: 0 when taken, or the seconds until its bucket could cover them (nothing is charged then). Off (rate 0): always 0. */
  charge(key: string, bytes: number): number {
    if (this.perMs <= 0) return 0;
    const lacking = this.buckets.take(key, bytes);
    return lacking === 0 ? 0 : Math.max(0.001, Math.ceil(lacking / this.perMs) / 1000);
  }
}
