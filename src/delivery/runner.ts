// Owns running due deliveries: bounded concurrency overall, per target and per API key, retries by channel schedule, wake-ups by timer.
import { clearTimer } from '../clock.js';
import { ownCopy } from '../store/own-copy.js';
import { KEEP_PROVEN_MS, ProvenTargets } from './proven-targets.js';
import { UnprovenTurns } from './unproven-turns.js';
import type { DeliveryJob, Settlement } from './queue.js';
import type { AttemptResult, ChannelRunner, RunnerOptions } from './runner-types.js';
import type { Slots } from './due-index.js';

export type { AttemptResult, ChannelRunner, RunnerOptions } from './runner-types.js';

/**
 * Never sleep longer than this between looks at the queue unless told otherwise (`RunnerOptions.maxIdleMs`): the
 * backstop for a missed wake-up (a job another cluster node enqueued) and a wall-clock jump (due times are wall-clock).
 */
export const DEFAULT_MAX_IDLE_MS = 1_000;
/**
 * Attempts in flight over every target unless told otherwise (`RunnerOptions.maxInFlight`). An attempt waiting on the
 * network costs a socket and a few KB, not CPU; the per-key and per-target limits keep one workspace's share small.
 */
export const DEFAULT_MAX_IN_FLIGHT = 256;
/** Failing targets remembered (`DeliveryRunner.failing`): a string each. */
const FAILING_KEPT = 10_000;
/** Finished job rows are kept this long (visible state, and replanning stays idempotent), then pruned. */
export const KEEP_FINISHED_MS = 7 * 24 * 60 * 60 * 1000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** Rows one pruning transaction removes; a pass goes on, one transaction after another, until a batch comes back short. */
const PRUNE_BATCH = 1000;

export class DeliveryRunner {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly perTarget = new Map<string, number>();
  private readonly perKey = new Map<string, number>();
  private readonly perKeyUnproven = new Map<string, number>();
  private readonly maxInFlight: number;
  private readonly maxPerTarget: number;
  private readonly maxPerKey: number;
  /** Room as things stand, for the next wake-up: a job held back by a full target or key wakes nobody. */
  private readonly slots: Pick<Slots, 'free'> = { free: (target, apiKey) => this.free(target, apiKey, undefined, this.options.clock.now()) };
  /**
   * Targets a channel asked to wait (an endpoint's rate limit: `{ok: 'later', at}`) and until when. Their jobs stay
   * pending as they are: a look skips the target until then, so a backlog behind a rate limit costs an attempt per
   * slot, not an attempt and a transaction per job per slot (bench/README.md, "Eighteenth session").
   */
  private readonly throttled = new Map<string, number>();
  /**
   * Targets whose last attempt failed (a timeout, a refused connection, an error status), oldest first: each may have
   * one attempt in flight until one succeeds, and those attempts have slots of their own (`maxFailing`), so targets
   * that fail cannot take the slots of those that work. An endpoint that never answers held 8 slots for 15 s at a
   * time, so four workspaces with two such endpoints each took all 64 and every other workspace's deliveries waited
   * 30–44 s (bench/README.md, "Nineteenth session"). At most FAILING_KEPT are remembered; the oldest forgotten is
   * treated as working again.
   */
  private readonly failing = new Set<string>();
  private readonly maxFailing: number;
  /**
   * Targets that had a successful attempt. One that never had (unproven) has one attempt in flight, in slots of their
   * own, `maxUnprovenPerKey` of them a key: sixteen new workspaces with sixteen endpoints each that never answer took
   * all 256 working slots for 15 s, until their first attempts failed (bench/README.md, "Twentieth session").
   */
  private readonly proven: ProvenTargets;
  private readonly maxUnproven: number;
  private readonly maxUnprovenPerKey: number;
  private readonly turns = new UnprovenTurns();
  /** Attempts in flight by pool, as the target stood when the attempt started: working, failing, unproven. */
  private readonly pools: Record<Pool, number> = { working: 0, failing: 0, unproven: 0 };
  private readonly maxIdleMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private lastPrune = 0;
  /** Set by `stop()`: a pruning pass under way starts no further batch (the store is about to close). */
  private stopped = false;
  private timerAt = 0;

  constructor(private readonly options: RunnerOptions) {
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.maxPerTarget = options.maxInFlightPerTarget ?? 8;
    this.maxPerKey = options.maxInFlightPerKey ?? Math.max(1, Math.floor(this.maxInFlight / 16));
    this.maxFailing = options.maxInFlightFailing ?? Math.max(1, Math.floor(this.maxInFlight / 4));
    this.maxUnproven = options.maxInFlightUnproven ?? Math.max(1, Math.floor(this.maxInFlight / 4));
    this.maxUnprovenPerKey = options.maxInFlightUnprovenPerKey ?? Math.max(1, Math.floor(this.maxInFlight / 64));
    this.proven = options.proven ?? new ProvenTargets();
    this.maxIdleMs = options.maxIdleMs ?? DEFAULT_MAX_IDLE_MS;
    options.queue.onEnqueue(() => this.schedule(0));
  }

  /** Starts waking on its own (production); tests call `runDue()` with a manual clock instead. */
  start(): void {
    this.running = true;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops starting attempts; resolves when the ones in flight have settled. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    if (this.timer !== undefined) clearTimer(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  get busy(): number {
    return this.inFlight.size;
  }

  /**
   * What the runner holds now, for /metrics: attempts in flight, targets and API keys with as many in flight as they may
   * have (their other due jobs wait), and targets a channel asked to wait (a rate limit) whose wait has not ended. The
   * first three walk at most `maxInFlight` entries; the throttled targets one entry per target that asked lately.
   */
  occupancy(): { readonly inFlight: number; readonly targetsFull: number; readonly keysFull: number; readonly targetsThrottled: number; readonly targetsFailing: number; readonly unprovenInFlight: number } {
    const now = this.options.clock.now();
    let targetsThrottled = 0;
    for (const until of this.throttled.values()) if (until > now) targetsThrottled++;
    return { inFlight: this.inFlight.size, targetsFull: atLeast(this.perTarget, this.maxPerTarget), keysFull: atLeast(this.perKey, this.maxPerKey), targetsThrottled, targetsFailing: this.failing.size, unprovenInFlight: this.pools.unproven };
  }

  /**
   * Starts every job due now that fits the concurrency limits and resolves when those attempts have settled.
   * Jobs held back by a full target or API key stay pending for the next call.
   */
  async runDue(): Promise<number> {
    if (this.options.mayRun?.() === false) return 0;
    const now = this.options.clock.now();
    const room = this.maxInFlight - this.pools.working + (this.maxFailing - this.pools.failing) + (this.maxUnproven - this.pools.unproven);
    if (room <= 0) return 0;
    const busy = new Set(this.inFlight.keys());
    const started: Promise<void>[] = [];
    // Counts what this scan picks too, so one busy target or key cannot fill the whole batch.
    const picked: Picked = { targets: new Map(), keys: new Map(), keysUnproven: new Map(), pools: { working: 0, failing: 0, unproven: 0 } };
    // Unproven targets with room are not taken in due order but noted, and picked after the scan in turns (`pickUnproven`).
    const unproven = new Map<string, string>();
    const slots: Slots = {
      free: (target, apiKey) => this.free(target, apiKey, picked, now),
      take: (target, apiKey) => {
        if (!this.free(target, apiKey, picked, now)) return false;
        const pool = this.poolOf(target);
        if (pool === 'unproven') {
          unproven.set(target, apiKey);
          return false;
        }
        bump(picked.targets, target, 1);
        bump(picked.keys, apiKey, 1);
        picked.pools[pool]++;
        return true;
      },
    };
    const jobs = this.options.queue.due(now, room, busy, slots);
    jobs.push(...this.pickUnproven(unproven, room - jobs.length, picked, busy, now));
    for (const job of jobs) {
      if (started.length >= room) break;
      bump(this.perTarget, job.target, 1);
      bump(this.perKey, job.apiKey, 1);
      const pool = this.poolOf(job.target);
      this.pools[pool]++;
      if (pool === 'unproven') bump(this.perKeyUnproven, job.apiKey, 1);
      const run = this.run(job).finally(() => {
        this.inFlight.delete(job.id);
        bump(this.perTarget, job.target, -1);
        bump(this.perKey, job.apiKey, -1);
        if (pool === 'unproven') bump(this.perKeyUnproven, job.apiKey, -1);
        this.pools[pool]--;
        if (this.running) this.schedule(0);
      });
      this.inFlight.set(job.id, run);
      started.push(run);
    }
    await Promise.all(started);
    return started.length;
  }

  /**
   * When a job not in flight becomes startable: the next wake-up (undefined: none pending). A job held back by a full
   * target or key does not count, so a backlog behind an endpoint that hangs wakes nobody; an attempt that ends does.
   */
  nextDue(): number | undefined {
    const now = this.options.clock.now();
    let next = this.options.queue.nextDue(new Set(this.inFlight.keys()), this.slots);
    // A throttled target's jobs were left out above: wake when its wait ends (an entry past its time is dropped).
    for (const [target, until] of this.throttled) {
      if (until <= now) this.throttled.delete(target);
      else if (next === undefined || until < next) next = until;
    }
    return next;
  }

  /** Of the unproven targets a scan found with room (target -> API key, in due order), the jobs to start, at most `limit`, in `UnprovenTurns` order. */
  private pickUnproven(found: ReadonlyMap<string, string>, limit: number, picked: Picked, busy: ReadonlySet<string>, now: number): DeliveryJob[] {
    const jobs: DeliveryJob[] = [];
    for (const [target, apiKey] of this.turns.order(found)) {
      if (jobs.length >= limit) break;
      const job = this.free(target, apiKey, picked, now) ? this.options.queue.firstDue(target, now, busy) : undefined;
      if (job === undefined) continue;
      bump(picked.targets, target, 1);
      bump(picked.keys, apiKey, 1);
      bump(picked.keysUnproven, apiKey, 1);
      picked.pools.unproven++;
      this.turns.serve(apiKey);
      jobs.push(job);
    }
    return jobs;
  }

  /** Whether one more attempt of `target` (of `apiKey`) fits, counting what a scan has `picked` so far. */
  private free(target: string, apiKey: string, picked: Picked | undefined, now: number): boolean {
    const ofTarget = (this.perTarget.get(target) ?? 0) + (picked?.targets.get(target) ?? 0);
    const ofKey = (this.perKey.get(apiKey) ?? 0) + (picked?.keys.get(apiKey) ?? 0);
    const pool = this.poolOf(target);
    const ofPool = this.pools[pool] + (picked?.pools[pool] ?? 0);
    let fits: boolean;
    if (pool === 'working') fits = ofTarget < this.maxPerTarget && ofPool < this.maxInFlight;
    else if (pool === 'failing') fits = ofTarget < 1 && ofPool < this.maxFailing;
    else fits = ofTarget < 1 && ofPool < this.maxUnproven && (this.perKeyUnproven.get(apiKey) ?? 0) + (picked?.keysUnproven.get(apiKey) ?? 0) < this.maxUnprovenPerKey;
    return fits && ofKey < this.maxPerKey && (this.throttled.get(target) ?? 0) <= now;
  }

  private poolOf(target: string): Pool {
    if (this.failing.has(target)) return 'failing';
    return this.proven.has(target) ? 'working' : 'unproven';
  }

  /** Runs until nothing is due at the current clock time (tests with a manual clock). */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const ran = await this.runDue();
      if (ran === 0) return total;
      total += ran;
    }
  }

  /**
   * Resolves once nothing is due at the clock's time and no attempt is in flight (tests of a started runner: the
   * attempts its own timer began are awaited too, which `drain` would skip as busy).
   */
  async idle(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.inFlight.values()]);
      if ((await this.runDue()) === 0 && this.inFlight.size === 0) return;
    }
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    const delay = Math.max(0, Math.min(delayMs, this.maxIdleMs));
    const at = Date.now() + delay;
    // Many completions in one turn ask for a wake-up each: keep one timer, the soonest.
    if (this.timer !== undefined && this.timerAt <= at) return;
    if (this.timer !== undefined) clearTimer(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), delay);
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    const now = this.options.clock.now();
    if (now - this.lastPrune >= PRUNE_EVERY_MS && this.options.mayRun?.() !== false) {
      this.lastPrune = now;
      void this.prune(now);
    }
    // Attempts settle in the background; the next wake-up is set from what is left pending.
    void this.runDue().catch((error: unknown) => this.options.log.error('delivery runner failed', { error }));
    const next = this.nextDue();
    this.schedule(next === undefined ? this.maxIdleMs : next - this.options.clock.now());
  }

  /**
   * One pruning pass (the runner's hourly wake-up runs it; tests call it): finished job rows past KEEP_FINISHED_MS and
   * the delivery logs past their retention, each in batches of PRUNE_BATCH, one transaction each, until a batch comes
   * back short. An hour's finished rows may be many more than one batch (a pass of one batch an hour fell behind any
   * workspace delivering over 24,000 a day). A failed batch ends its pass, logged; the next pass tries again. The
   * proven targets' rows with no success for KEEP_PROVEN_MS go too.
   */
  async prune(now: number): Promise<void> {
    const pruneLogs = this.options.pruneLogs;
    await Promise.all([
      this.pruneBatches('finished deliveries', (limit) => this.options.queue.prune(now - KEEP_FINISHED_MS, limit)),
      pruneLogs === undefined ? undefined : this.pruneBatches('delivery logs', (limit) => pruneLogs(now, limit)),
      this.proven.prune(now - KEEP_PROVEN_MS, () => this.stopped).catch((error: unknown) => this.options.log.error('pruning proven delivery targets failed', { error })),
    ]);
  }

  private async pruneBatches(what: string, batch: (limit: number) => Promise<number>): Promise<void> {
    try {
      while ((await batch(PRUNE_BATCH)) >= PRUNE_BATCH && !this.stopped) {
        // A full batch: more may be left.
      }
    } catch (error) {
      this.options.log.error(`pruning ${what} failed`, { error });
    }
  }

  private async run(job: DeliveryJob): Promise<void> {
    const channel = this.options.channels[job.channel];
    // The worker role may have been lost since the scan: send nothing; the job stays pending for the next holder.
    if (this.options.mayRun?.() === false) return;
    let result: AttemptResult;
    try {
      result = await channel.attempt(job);
    } catch (error) {
      result = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    if (result.ok === 'later') {
      // Not an attempt: nothing to record. The target waits until `at`; its jobs keep their due times and their order.
      this.throttled.set(job.target, Math.max(this.throttled.get(job.target) ?? 0, result.at));
      return;
    }
    if (result.ok === 'cancel') this.failing.delete(job.target);
    else this.noteOutcome(job.target, result.ok === true);
    const now = this.options.clock.now();
    const settlement = this.settlement(job, result, channel, now);
    try {
      const next = await this.options.queue.settle(job, settlement, now, (tx, settled) => {
        // The target answered: it is proven, from this settlement on (stored with it), unless it has gone since.
        if (result.ok === true && channel.targetGone?.(job) !== true) this.proven.record(tx, job.target, now);
        channel.settled?.(tx, settled, result, now);
      });
      if (next.state === 'failed') this.options.log.warn('delivery failed for good', { jobId: job.id, channel: job.channel, attempts: next.attempt, error: next.lastError });
      channel.after?.(next);
    } catch (error) {
      // The attempt happened but its outcome is not recorded: the job stays pending and runs again (at least once).
      this.options.log.error('could not record a delivery attempt', { jobId: job.id, error });
    }
  }

  /**
   * A failed attempt leaves its target one attempt in flight at a time until one succeeds (`failing`). A cancelled job
   * (its endpoint deleted or disabled) tried nothing and forgets the target: each endpoint deleted with a job pending
   * was remembered as failing until 10,000 others pushed it out (bench/README.md, "Twentieth session: endpoint churn
   * memory"). The target is kept as a copy of its own (`ownCopy`).
   */
  private noteOutcome(target: string, delivered: boolean): void {
    this.failing.delete(target);
    if (delivered) return;
    this.failing.add(ownCopy(target));
    if (this.failing.size > FAILING_KEPT) this.failing.delete(this.failing.values().next().value as string);
  }

  private settlement(job: DeliveryJob, result: Exclude<AttemptResult, { ok: 'later' }>, channel: ChannelRunner, now: number): Settlement {
    if (result.ok === true) return { kind: 'delivered' };
    if (result.ok === 'cancel') return { kind: 'cancelled', error: result.error };
    const delay = channel.retryDelaysMs[job.attempt];
    if (result.permanent === true || delay === undefined) return { kind: 'failed', error: result.error };
    return { kind: 'retry', at: now + delay, error: result.error };
  }
}

/** Where an attempt runs: a proven target not failing, a failing one, one never yet delivered to. */
type Pool = 'working' | 'failing' | 'unproven';

/** What one scan has picked so far, by target and by API key (and of those, unproven targets' attempts by key). */
interface Picked {
  readonly targets: Map<string, number>;
  readonly keys: Map<string, number>;
  readonly keysUnproven: Map<string, number>;
  readonly pools: Record<Pool, number>;
}

/** How many of `counts` have reached `limit`. */
function atLeast(counts: ReadonlyMap<string, number>, limit: number): number {
  let n = 0;
  for (const count of counts.values()) if (count >= limit) n++;
  return n;
}

/** Adds `by` to a count, dropping it at zero so the maps hold only what is in flight. */
function bump(counts: Map<string, number>, name: string, by: number): void {
  const next = (counts.get(name) ?? 0) + by;
  if (next <= 0) counts.delete(name);
  else counts.set(name, next);
}
