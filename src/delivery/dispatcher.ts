// Owns reading the outbox: claims events, lets every channel plan its deliveries and acks the events, in one transaction.
import { clearTimer } from '../clock.js';
import type { Logger } from '../log.js';
import { type Outbox } from '../events/outbox.js';
import type { OutboxEvent } from '../events/types.js';
import type { Store, WriteTx } from '../store/env.js';
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

/**
 * Jobs one planning transaction writes before it commits and the rest of the batch goes on in the next: what bounds
 * how long one transaction holds the event loop. 250 when a job cost ~45 µs of the loop; 500 since planning got
 * cheaper, which holds it as long (~10 ms at the median, bench/README.md "Twentieth session: planning cost") and
 * commits half as often: each commit rewrites a leaf page per endpoint in each per-endpoint index, whatever the
 * number of jobs, so jobs per commit is most of the bytes written per job.
 */
export const JOB_BUDGET = 500;

/**
 * Jobs one API key's events may plan in one round; its further events are parked in its lane (src/events/outbox-lanes.ts)
 * and planned in later rounds, the lanes in turn. Without it one key's fan-out held every other key's next event
 * behind it: 1,000 events to 100 endpoints were 100,000 jobs planned first, 17 s here (bench/README.md, "Nineteenth
 * session").
 */
export const KEY_SHARE = JOB_BUDGET;

/** A round claims at most this many batches: more only while the claimed events are parked rather than planned. */
const CLAIMS_PER_ROUND = 10;

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
  /** Events were still parked after the last round: the next one goes on at once. */
  private lanesWaiting = false;

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
    const { outbox, queue } = this.options;
    this.lanesWaiting = false;
    if (this.options.mayRun?.() === false) return 0;
    const now = this.options.clock.now();
    const reclaim = this.reclaim;
    this.reclaim = false;
    // Another node may have parked events while it dispatched: read the lanes again.
    if (reclaim) outbox.lanes.reload();
    const batchSize = this.options.batchSize ?? 100;
    const jobWrites = queue.writeCount;
    /** Jobs each API key's events planned in this round (KEY_SHARE). */
    const shares = new Map<string, number>();
    const counts = { claimed: 0, planned: 0 };
    // A batch whose events were parked cost little, so the round claims again, until a batch's worth was planned or
    // CLAIMS_PER_ROUND batches were taken: a key's backlog ahead of another key's event is moved aside at ~25–50 µs an
    // event instead of one batch a round behind the lanes' turns.
    for (let claim = reclaim; counts.planned < batchSize && counts.claimed < batchSize * CLAIMS_PER_ROUND; claim = false) {
      const events = await outbox.claim({ limit: batchSize, leaseMs: LEASE_MS, now, reclaim: claim });
      counts.claimed += events.length;
      // Usually one transaction for the batch. One that has written JOB_BUDGET jobs commits what it planned, and the
      // rest of the batch goes on in the next (the commit lets the event loop turn): one event may fan out to many
      // endpoints, and the whole batch in one transaction held the loop for every workspace (100 events to 100
      // endpoints: 370 ms, bench/README.md "Eighteenth session").
      for (let next = 0; next < events.length; ) next += await this.planClaimed(events.slice(next), shares, now, counts);
      if (events.length < batchSize) break;
    }
    const fromLanes = outbox.lanes.size === 0 ? 0 : await this.planLanes(shares, now).catch((error: unknown) => {
      // Its lane reads went with the transaction: the next round reads the lanes from the database again.
      outbox.lanes.reload();
      throw error;
    });
    // Every round has fresh shares, so a round after this one takes parked events even when this one took none.
    this.lanesWaiting = outbox.lanes.size > 0;
    // The runner looks for due jobs when told; a round that wrote none (no channel configured for its events, the
    // usual case) has nothing new for it, and waking it anyway cost a scan of the due index and a timer per round
    // (~1.8% of a REST comment's CPU, bench/README.md "REST comment path, sixth session").
    if (queue.writeCount !== jobWrites) queue.notify();
    return counts.claimed + fromLanes;
  }

  /**
   * One transaction over claimed events, in order, until JOB_BUDGET jobs are written: each is planned, or parked in
   * its key's lane when that key has one (its events stay in order) or has planned its share of the round. Answers how
   * many events it took; the planned ones are acked and the parked ones moved, in the same transaction.
   */
  private planClaimed(events: readonly OutboxEvent[], shares: Map<string, number>, now: number, counts: { planned: number }): Promise<number> {
    const { outbox, queue } = this.options;
    return this.options.store.transaction((tx) => this.planning(() => {
      const budget = queue.writeCount + JOB_BUDGET;
      const planned: OutboxEvent[] = [];
      const parked: OutboxEvent[] = [];
      for (const event of events) {
        if (outbox.lanes.has(event.apiKey) || (shares.get(event.apiKey) ?? 0) >= KEY_SHARE) {
          parked.push(event);
          continue;
        }
        planned.push(event);
        // Removed since the claim: its document or organization was deleted, and nothing about it is sent.
        if (outbox.holds(event)) this.planOne(tx, event, shares, now);
        if (queue.writeCount >= budget) break;
      }
      outbox.ackIn(tx, planned);
      outbox.parkIn(tx, parked);
      counts.planned += planned.length;
      return planned.length + parked.length;
    }));
  }

  /**
   * One transaction of parked events, the lanes in turn from where the last round stopped: each lane plans in seq
   * order until its key has planned its share of the round, until JOB_BUDGET jobs are written or every lane has had a
   * turn. Each event leaves its lane in the transaction that planned it. Answers how many events it took.
   */
  private planLanes(shares: Map<string, number>, now: number): Promise<number> {
    const { outbox, queue } = this.options;
    return this.options.store.transaction((tx) => this.planning(() => {
      const budget = queue.writeCount + JOB_BUDGET;
      const turned = new Set<string>();
      let taken = 0;
      for (let turn = outbox.lanes.nextTurn(); turn !== undefined && !turned.has(turn.apiKey); turn = outbox.lanes.nextTurn()) {
        turned.add(turn.apiKey);
        let ended = true;
        for (const event of turn.events) {
          if (queue.writeCount >= budget || (shares.get(event.apiKey) ?? 0) >= KEY_SHARE) {
            ended = false;
            break;
          }
          // Removed since it was read: its document or organization was deleted.
          if (outbox.lanes.holds(event)) this.planOne(tx, event, shares, now);
          outbox.lanes.remove(tx, event);
          taken++;
        }
        // Planned to its end: the key's next events are planned as they come instead of parked behind nothing.
        if (ended) outbox.lanes.emptied(turn.apiKey);
        if (queue.writeCount >= budget) break;
      }
      return taken;
    }));
  }

  /** Lets every channel plan one event; counts the jobs it wrote against its key's share of the round. */
  private planOne(tx: WriteTx, event: OutboxEvent, shares: Map<string, number>, now: number): void {
    const { queue, log } = this.options;
    const before = queue.writeCount;
    for (const planner of this.options.planners) {
      try {
        planner.plan(tx, event, now);
      } catch (error) {
        // One channel's bad config must not hold the others' deliveries: log it and go on with the rest.
        log.error('delivery planning failed', { channel: planner.name, eventId: event.id, error });
      }
    }
    shares.set(event.apiKey, (shares.get(event.apiKey) ?? 0) + queue.writeCount - before);
  }

  private planning<T>(body: () => T): T {
    return this.options.planning === undefined ? body() : this.options.planning(body);
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
      next = n >= batchSize || this.lanesWaiting ? 0 : this.woken ? this.gapLeft() : this.pollMs;
    } catch (error) {
      this.options.log.error('outbox dispatch failed', { error });
      next = 1_000;
    } finally {
      this.inRound = false;
    }
    this.schedule(next);
  }
}
