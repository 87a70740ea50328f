// Owns the seam between the dispatcher and the channels: what planning an event may do, and the retry schedules.
import type { WriteTx } from '../store/env.js';
import type { EventType, OutboxEvent } from '../events/types.js';

/** Planning runs inside the transaction that also acks nothing: it must be synchronous and idempotent per event. */
export interface Planner {
  readonly name: string;
  /**
   * Whether the channel would act on an event of `type` under `apiKey` as configured now (enabled, the trigger on),
   * before any per-recipient choice. What no planner wants is not written to the outbox (src/delivery/audience.ts);
   * `plan` checks again, since a config may have changed since the event committed.
   */
  wants(apiKey: string, type: EventType): boolean;
  /**
   * A channel that is also a recorder of the outbox (`EventRecorder`): whether the dispatcher must plan events of
   * `type` under `apiKey`, beside what the channel records in the raising transaction. Absent: `wants`.
   */
  dispatches?(apiKey: string, type: EventType): boolean;
  plan(tx: WriteTx, event: OutboxEvent, now: number): void;
}

/** Email and basic webhooks: a first attempt, then 5 s, 1 min, 10 min, 1 h; then failed. */
export const BASIC_RETRY_DELAYS_MS: readonly number[] = [5_000, 60_000, 600_000, 3_600_000];

const MIN = 60_000;
const HOUR = 60 * MIN;

/** Advanced webhooks (upstream 3.2, Standard Webhooks/Svix): after each failure 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const ADVANCED_RETRY_DELAYS_MS: readonly number[] = [0, 5_000, 5 * MIN, 30 * MIN, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

/** Short text of an error for job rows and attempt records. */
export function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 500);
}
