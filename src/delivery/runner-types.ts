// Owns what the delivery runner is given and what a channel's attempt tells it (the runner itself: runner.ts).
import type { Logger } from '../log.js';
import type { WriteTx } from '../store/env.js';
import type { Clock } from './clock.js';
import type { ProvenTargets } from './proven-targets.js';
import type { ChannelName, DeliveryJob, DeliveryQueue } from './queue.js';

/** What a channel's attempt reports. `permanent`: retrying cannot help (bad credentials, target gone). */
export type AttemptResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly error: string; readonly permanent?: boolean }
  /** The target is not ready for this job yet (rate limit): not an attempt, nothing recorded; the target waits until `at`. */
  | { readonly ok: 'later'; readonly at: number }
  | { readonly ok: 'cancel'; readonly error: string };

export interface ChannelRunner {
  /** Delays after each failed attempt: entry i is the wait before attempt i + 2. Past the end the job fails. */
  readonly retryDelaysMs: readonly number[];
  attempt(job: DeliveryJob): Promise<AttemptResult>;
  /** Channel bookkeeping written with the settlement (attempt records, exhaustion events). */
  settled?(tx: WriteTx, next: DeliveryJob, result: AttemptResult, now: number): void;
  /**
   * Inside a successful attempt's settlement: whether its target has gone meanwhile (an endpoint deleted while the
   * attempt was out), so no proof of it is recorded; its deletion forgot the proof it had, if it came first.
   */
  targetGone?(job: DeliveryJob): boolean;
  /** After the settlement committed (rate-limit clocks, follow-up wake-ups). */
  after?(job: DeliveryJob): void;
}

export interface RunnerOptions {
  readonly queue: DeliveryQueue;
  readonly channels: Readonly<Record<ChannelName, ChannelRunner>>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly maxInFlight?: number;
  readonly maxInFlightPerTarget?: number;
  /** Attempts in flight to targets whose last attempt failed, beside `maxInFlight` (default a quarter of it: 64). */
  readonly maxInFlightFailing?: number;
  /** Attempts in flight for one API key over all its targets (default a sixteenth of `maxInFlight`: 16). */
  readonly maxInFlightPerKey?: number;
  /** Attempts in flight to targets that never had a successful attempt, beside the others (default a quarter of `maxInFlight`: 64). */
  readonly maxInFlightUnproven?: number;
  /** Of those, attempts in flight for one API key (default a sixty-fourth of `maxInFlight`: 4). */
  readonly maxInFlightUnprovenPerKey?: number;
  /** Which targets have had a successful attempt; default: in memory only (the server's is stored: src/delivery/service.ts). */
  readonly proven?: ProvenTargets;
  /** Whether this process may send now (the worker role, src/worker-role.ts), checked before each attempt; default: always. */
  readonly mayRun?: () => boolean;
  /** Longest sleep between looks at the queue (default DEFAULT_MAX_IDLE_MS); may be long where every enqueue wakes the runner. */
  readonly maxIdleMs?: number;
  /** Trims the delivery logs past their retention (advanced webhook messages), on the job rows' pruning schedule: at most `limit` rows a call. */
  readonly pruneLogs?: (now: number, limit: number) => Promise<number>;
}
