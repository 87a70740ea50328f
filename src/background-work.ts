// Owns running the shared background work (outbox, delivery queue, jobs, agent-run recovery and pruning) only while this process holds the worker role.
import type { AgentRuns } from './agents/runs.js';
import type { Delivery } from './delivery/service.js';
import type { Logger } from './log.js';
import type { Jobs } from './tenant/jobs.js';
import type { WorkerRole } from './worker-role.js';

/** The backstop: how often the holder looks for work nobody woke it for (a lost wake-up, a row from another node). */
export const WORK_SCAN_MS = 5_000;
/** How often the holder removes agent runs past their retention (at the first scan after taking the role, then hourly). */
export const RUN_PRUNE_EVERY_MS = 3_600_000;

export interface BackgroundWorkDeps {
  readonly role: WorkerRole;
  readonly delivery: Delivery;
  readonly jobs: Jobs;
  readonly runs: AgentRuns;
  readonly log: Logger;
  /** false: delivery runs only when a test pumps it (ServerOptions.autoDeliver). */
  readonly autoDeliver: boolean;
  readonly scanMs?: number;
  /** The server's clock (tests pass one they advance): when runs were last pruned. */
  readonly now?: () => number;
}

/**
 * Follows the worker role. Taking it starts the dispatcher and the delivery runner (which resume from the durable
 * rows), resumes unfinished jobs and fails agent runs whose process is gone; losing it stops them before anything
 * else is sent (the dispatcher and runner also check the role before each claim and each attempt). Wake-ups from any
 * node make the holder look at once; a scan every `scanMs` is the backstop.
 */
export class BackgroundWork {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The current start or pause, so a quick lose-then-take never runs both halves at once. */
  private transition: Promise<void> = Promise.resolve();
  private lastRunPrune = -Infinity;
  /** The pruning pass under way, awaited by stop() so that no batch writes to a closing store. */
  private pruning: Promise<void> = Promise.resolve();

  constructor(private readonly deps: BackgroundWorkDeps) {}

  start(): void {
    const { role, delivery } = this.deps;
    role.onChange((held) => this.follow(held));
    role.onWake((kind) => {
      if (this.stopped || !role.held()) return;
      if (kind === 'outbox') delivery.dispatcher.wake();
      else this.resumeJobs(false);
    });
    // Wake-ups come from every node, this one included (server.ts wires `Outbox.committed` to `role.wake`); the scan
    // is the backstop for a lost one.
    this.timer = setInterval(() => this.scan(), this.deps.scanMs ?? WORK_SCAN_MS);
    this.timer.unref();
    if (role.held()) this.follow(true);
  }

  /** Graceful stop: no more dispatching, sending or job starts; what is in flight settles. The role is released after. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.transition;
    await this.pruning;
    if (this.deps.autoDeliver) await this.deps.delivery.pause();
    await this.deps.jobs.stop();
  }

  private follow(held: boolean): void {
    this.transition = this.transition.then(async () => {
      if (held && !this.stopped && this.deps.role.held()) {
        this.deps.delivery.dispatcher.takeOver();
        if (this.deps.autoDeliver) this.deps.delivery.start();
        this.scan(true);
      } else if (!held && this.deps.autoDeliver) {
        await this.deps.delivery.pause();
      }
    }).catch((error: unknown) => this.deps.log.error('following the worker role failed', { error }));
  }

  private scan(taken = false): void {
    const { role, runs, log } = this.deps;
    if (this.stopped || !role.held()) return;
    // Taking the role reads every job and run row once (rows from before their indexes); later scans read the indexes.
    this.resumeJobs(taken);
    runs.recover((processId) => role.alive(processId), { full: taken }).catch((error: unknown) => log.warn('recovering interrupted agent runs failed; retrying at the next scan', { error: String(error) }));
    const now = (this.deps.now ?? Date.now)();
    if (now - this.lastRunPrune >= RUN_PRUNE_EVERY_MS) {
      this.lastRunPrune = now;
      this.pruning = runs.prune().then(
        (count) => (count > 0 ? log.info('agent runs past their retention removed', { count }) : undefined),
        (error: unknown) => log.warn('pruning agent runs failed; retrying in an hour', { error: String(error) }),
      );
    }
  }

  private resumeJobs(full: boolean): void {
    // Not awaited: the jobs start before resume's first await. A failed index repair is tried again: stale entries at
    // the next scan, missing ones at the next full pass (or when their job is next saved).
    this.deps.jobs.resume({ full }).catch((error: unknown) => this.deps.log.warn('resuming background jobs failed; retrying at the next scan', { error: String(error) }));
  }
}
