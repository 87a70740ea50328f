// Owns reading the outbox: claims events, lets every channel plan its deliveries and acks the events, in one transaction.
import { clearTimer } from '../clock.js';
import type { Logger } from '../log.js';
import { type Outbox } from '../events/outbox.js';
import type { Store } from '../store/env.js';
import type { Planner } from './channel.js';
import type { Clock } from './clock.js';
import type { DeliveryQueue } from './queue.js';

export interface DispatcherOptions {
  readonly store: Store;
  readonly outbox: Outbox;
  readonly queue: DeliveryQueue;
  readonly planners: readonly Planner[];
  readonly clock: Clock;
  readonly log: Logger;
  /**
   * How often an idle dispatcher looks at the outbox (default DEFAULT_POLL_MS). Where every wake-up follows the rows it
   * announces (one process) this is only the backstop for a lost one and may be long.
   */
  readonly pollMs?: number;
  readonly batchSize?: number;
  /** Whether this process may dispatch now (the worker role, src/worker-role.ts); default: always. */
  readonly mayRun?: () => boolean;
  /**
   * Wraps the planning of each round (synchronous, inside its transaction): the delivery service reads each delivery
   * config once per round through it instead of once per event and planner (DeliveryConfigStore.memoized).
   */
  readonly planning?: <T>(body: () => T) => T;
}

/** A claimed event not acked within this time (a crash mid-plan) is claimed again; planning is idempotent. */
const LEASE_MS = 30_000;

/** Jobs one planning transaction writes before it commits and the rest of the batch goes on in the next. */
export const JOB_BUDGET = 250;

/** How often an idle dispatcher looks at the outbox unless told otherwise (`DispatcherOptions.pollMs`). */
export const DEFAULT_POLL_MS = 100;

/**
 * Rounds woken by new events start at most this often. Under a load of REST comments every group commit wakes the
 * dispatcher, and a round each time was a commit of its own for a few events: ~8 µs of CPU and ~3.7 KB written per
 * comment (bench/README.md, "Fourteenth session"). With the gap, the events of several commits share one round. A
 * full batch still goes on at once; an idle dispatcher answers a wake-up at once.
 */
export const ROUND_GAP_MS = 10;

export class Dispatcher {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private pumping: Promise<number> | undefined;
  private reclaim = false;
  /** A round (a scheduled pump and the choice of the next one) is under way: there is only ever one. */
  private inRound = false;
  /** performance.now() when the last round started (see ROUND_GAP_MS). */
  private roundStartedAt = Number.NEGATIVE_INFINITY;
  /** A wake-up came during the round: its events may have committed after the round's claim, so look again at once. */
  private woken = false;

  constructor(private readonly options: DispatcherOptions) {}

  /** How long an idle dispatcher waits before it looks at the outbox unwoken. */
  get pollMs(): number {
    return this.options.pollMs ?? DEFAULT_POLL_MS;
  }

  start(): void {
    // Idempotent: a second start must not add a second polling loop.
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /** Stops polling and waits for the round under way: once this resolves the dispatcher touches the store no more. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) clearTimer(this.timer);
    this.timer = undefined;
    await this.pumping;
  }

  /**
   * This process just became the one dispatcher (the worker role, or a start): events a dead dispatcher claimed but
   * never acked are taken at once instead of after their claim lapses (planning is idempotent).
   */
  takeOver(): void {
    this.reclaim = true;
  }

  /**
   * New events were committed (here or on another node): look at once instead of at the next poll. During a round the
   * wake-up is kept for its end (its claim may have run before the events committed); replacing the round's timer
   * instead would start a second loop beside it, one `stop()` could not clear.
   */
  wake(): void {
    if (!this.running) return;
    if (this.inRound) this.woken = true;
    else this.schedule(this.gapLeft());
  }

  /**
   * One round: claim up to a batch of events, plan them all and ack them in one transaction (jobs, activity rows,
   * notification rows, the events removed): one commit per round, where planning and acking apart cost two (each
   * LMDB commit costs ~0.5 ms of CPU here, bench/README.md, "REST comment writes"). A failed commit leaves the
   * events to be claimed again; every planned row has an id derived from the event, so nothing is enqueued twice.
   */
  pump(): Promise<number> {
    this.pumping ??= this.pumpOnce().finally(() => {
      this.pumping = undefined;
    });
    return this.pumping;
  }

  /** Pumps until the outbox has nothing claimable (tests). */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.pump();
      if (n === 0) return total;
      total += n;
    }
  }

  private async pumpOnce(): Promise<number> {
    const { outbox, store, planners, clock, queue, log } = this.options;
    if (this.options.mayRun?.() === false) return 0;
    const now = clock.now();
    const reclaim = this.reclaim;
    this.reclaim = false;
    const events = await outbox.claim({ limit: this.options.batchSize ?? 100, leaseMs: LEASE_MS, now, reclaim });
    if (events.length === 0) return 0;
    const planning = this.options.planning ?? ((body) => body());
    const jobWrites = queue.writeCount;
    // Usually one transaction for the batch. One that has written JOB_BUDGET jobs commits what it planned, and the
    // rest of the batch goes on in the next (the commit lets the event loop turn): one event may fan out to many
    // endpoints, and the whole batch in one transaction held the loop for every workspace (100 events to 100
    // endpoints: 370 ms, bench/README.md "Eighteenth session").
    for (let next = 0; next < events.length; ) {
      const from = next;
      next += await store.transaction((tx) => planning(() => {
        const budget = queue.writeCount + JOB_BUDGET;
        let planned = 0;
        for (const event of events.slice(from)) {
          planned++;
          // Removed since the claim: its document or organization was deleted, and nothing about it is sent.
          if (!outbox.holds(event)) continue;
          for (const planner of planners) {
            try {
              planner.plan(tx, event, now);
            } catch (error) {
              // One channel's bad config must not hold the others' deliveries: log it and go on with the rest.
              log.error('delivery planning failed', { channel: planner.name, eventId: event.id, error });
            }
          }
          if (queue.writeCount >= budget) break;
        }
        outbox.ackIn(tx, events.slice(from, from + planned));
        return planned;
      }));
    }
    // The runner looks for due jobs when told; a round that wrote none (no channel configured for its events, the
    // usual case) has nothing new for it, and waking it anyway cost a scan of the due index and a timer per round
    // (~1.8% of a REST comment's CPU, bench/README.md "REST comment path, sixth session").
    if (queue.writeCount !== jobWrites) queue.notify();
    return events.length;
  }

  /** The one timer: a later call replaces an earlier one (never two loops). */
  private schedule(delayMs: number): void {
    if (!this.running) return;
    if (this.timer !== undefined) clearTimer(this.timer);
    this.timer = setTimeout(() => void this.round(), delayMs);
    this.timer.unref();
  }

  /** How long until a woken round may start (0 once ROUND_GAP_MS has passed since the last round started). */
  private gapLeft(): number {
    return Math.max(0, this.roundStartedAt + ROUND_GAP_MS - performance.now());
  }

  private async round(): Promise<void> {
    this.timer = undefined;
    if (!this.running) return;
    this.roundStartedAt = performance.now();
    this.inRound = true;
    this.woken = false;
    const batchSize = this.options.batchSize ?? 100;
    let next: number;
    try {
      // A pump a test started may be under way (`pump()` then answers it): its claim may predate the wake-up.
      if (this.pumping !== undefined) this.woken = true;
      const n = await this.pump();
      // Again at once only after a full batch; after a wake-up during the round, once ROUND_GAP_MS has passed since
      // it started. A partial batch means the outbox is drained, and the events of the next poll period then share one
      // round (one commit) instead of a round each few events under load.
      next = n >= batchSize ? 0 : this.woken ? this.gapLeft() : this.pollMs;
    } catch (error) {
      this.options.log.error('outbox dispatch failed', { error });
      next = 1_000;
    } finally {
      this.inRound = false;
    }
    this.schedule(next);
  }
}
