// Owns each API key's share of the event loop for applying sync frames (API_KEY_SYNC_CPU_MS_PER_SECOND).
import { limitRefusals } from '../metrics/instruments.js';
import { TokenBuckets } from '../token-buckets.js';

/** Keys remembered at once; past it the least recently charged is forgotten (it comes back rested). */
const MAX_KEYS = 50_000;

/** A key may spend this many seconds' worth of its share at once. */
const BURST_SECONDS = 2;

/**
 * What a frame costs is known only once it is applied: one Yjs update inserting where many concurrent items begin
 * is a scan of all of them, so a client that never syncs and inserts at the start of a large text costs O(n) a
 * frame (seconds of the one event loop, bench/README.md "Twentieth session: sync messages per key"), and the message
 * and byte limits cannot see it coming. So each frame's time is measured and spent from its key's bucket, into debt
 * (up to a minute's worth), and a key with nothing left has its next frames refused: what it took, it pays for by
 * waiting, while every other key goes on.
 */
export class SyncCpuBudget {
  private readonly buckets: TokenBuckets;

  constructor(readonly msPerSecond: number, private readonly now: () => number = () => performance.now()) {
    this.buckets = new TokenBuckets({ capacity: msPerSecond * BURST_SECONDS, refillPerMs: msPerSecond / 1000, maxKeys: MAX_KEYS, now, maxDebt: msPerSecond * 60 });
  }

  /** `ms` of the event loop went to a frame of `apiKey`. */
  spend(apiKey: string, ms: number): void {
    this.buckets.spend(apiKey, ms);
  }

  /** Whether `apiKey` has spent its share: its frames are refused until the refill covers the debt. */
  exhausted(apiKey: string): boolean {
    return !this.buckets.hasAny(apiKey);
  }

  /** `exhausted`, counting the refusal (plait_limit_refusals_total{limit="api_key_sync_cpu"}). */
  refuses(apiKey: string): boolean {
    if (!this.exhausted(apiKey)) return false;
    limitRefusals.api_key_sync_cpu++;
    return true;
  }

  /**
   * Runs `frame(a, b, c)` (one client frame, synchronous) and spends the time it took from `apiKey`, even when it throws.
   * The arguments are passed, not closed over, so a frame costs no closure here; the budget's clock times the frame and
   * its last read is the bucket's refill time too: two clock reads a frame (bench/README.md, "Twenty-first session").
   */
  timed<A, B, C>(apiKey: string, frame: (a: A, b: B, c: C) => void, a: A, b: B, c: C): void {
    const start = this.now();
    try {
      frame(a, b, c);
    } finally {
      const end = this.now();
      this.buckets.spend(apiKey, end - start, end);
    }
  }
}
