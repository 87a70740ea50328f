// Owns durable background jobs (document migration, GDPR erase): submitted, run once, resumed after a restart, status kept.
import type { Database, Key } from 'lmdb';
import { randomId } from '../auth/secrets.js';
import { AppError, notFound } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { LocalWorkerRole, type WorkerRole } from '../worker-role.js';

export type JobStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

export interface JobRecord<P = unknown, R = unknown> {
  readonly jobId: string;
  readonly apiKey: string;
  readonly kind: string;
  readonly params: P;
  status: JobStatus;
  readonly createdAt: number;
  updatedAt: number;
  /** What the job reports when done (counts, for example). */
  result?: R;
  /** Why it failed, for the status answer. */
  error?: string;
}

/**
 * Runs one job. It must be idempotent: after a crash mid-way it runs again from the start on the next start, and
 * must then finish the work (or notice it is already done).
 */
export type JobRunner<P, R> = (job: JobRecord<P, R>) => Promise<R>;

/**
 * Cluster mode (src/cluster/job-forward.ts): runs a job on `node`, the owner of a document the job needs (its runner
 * met NotOwnerError), and resolves with the result; the error the job met there otherwise. `hops`: forwards so far.
 */
export interface JobForwarding {
  forward(node: string, job: JobRecord, hops: number): Promise<unknown>;
}

/** Forwards of one run at most: a job whose documents are owned by more nodes than this waits for the next scan. */
const MAX_HOPS = 3;

/** The owner named by a NotOwnerError (src/doc/ownership.ts; read by shape, so the tenant layer imports no document code). */
function ownerNamedBy(error: unknown): string | undefined {
  if (!(error instanceof AppError) || error.status !== 'UNAVAILABLE') return undefined;
  const owner = (error as AppError & { owner?: unknown }).owner;
  return typeof owner === 'string' ? owner : undefined;
}

export class Jobs {
  private readonly db: Database<JobRecord, Key>;
  private readonly runners = new Map<string, JobRunner<unknown, unknown>>();
  /** Jobs running in this process, so stop() can wait for them. */
  private readonly running = new Set<Promise<void>>();
  /** Their ids, so a scan never starts a job twice in this process. */
  private readonly runningIds = new Set<string>();
  /** Stored jobs of a kind this process has no runner for (already reported). */
  private readonly unrunnable = new Set<string>();
  private stopped = false;
  private forwarding: JobForwarding | undefined;

  /**
   * `role`: only the holder of the worker role runs jobs (one process: always this one). A job submitted on another
   * node is recorded there and the holder is woken; the holder also scans for unfinished jobs (`resume`).
   */
  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly role: Pick<WorkerRole, 'held' | 'wake'> = new LocalWorkerRole(),
  ) {
    this.db = store.records<JobRecord>(DB.jobs);
  }

  /** Cluster mode: a job that needs a document another node owns runs there (request/reply) instead of waiting. */
  forwardTo(forwarding: JobForwarding): void {
    this.forwarding = forwarding;
  }

  /**
   * Runs `job` here for the node that forwarded it (this node owns a document it needs); that node records the status.
   * Counted as running, so a graceful stop waits for it.
   */
  runForwarded(job: JobRecord, hops: number): Promise<unknown> {
    if (this.stopped) return Promise.reject(new AppError('UNAVAILABLE', 'this node is stopping; the job runs again later'));
    const runner = this.runners.get(job.kind);
    if (runner === undefined) return Promise.reject(new AppError('FAILED_PRECONDITION', `this node has no runner for jobs of kind "${job.kind}"`));
    const run = this.runOrForward(job, runner, hops);
    const tracked = run.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
    return run;
  }

  private async runOrForward(job: JobRecord, runner: JobRunner<unknown, unknown>, hops: number): Promise<unknown> {
    try {
      return await runner(job);
    } catch (error) {
      const owner = ownerNamedBy(error);
      if (owner === undefined || this.forwarding === undefined || hops >= MAX_HOPS) throw error;
      // Jobs are idempotent: the owner runs it from the start, and finds the part done here already done.
      this.log.info('background job forwarded to the owner of a document it needs', { kind: job.kind, jobId: job.jobId, owner, hops: hops + 1 });
      return this.forwarding.forward(owner, job, hops + 1);
    }
  }

  register<P, R>(kind: string, runner: JobRunner<P, R>): void {
    this.runners.set(kind, runner as JobRunner<unknown, unknown>);
  }

  /** Records the job (committed before this resolves, so it survives a crash) and starts it here or wakes the worker. */
  async submit<P>(apiKey: string, kind: string, params: P, jobId = randomId(24)): Promise<JobRecord<P>> {
    const now = this.now();
    const job: JobRecord<P> = { jobId, apiKey, kind, params, status: 'pending', createdAt: now, updatedAt: now };
    await this.store.transaction(() => this.db.putSync([apiKey, jobId], job));
    if (this.role.held()) this.start(job);
    else this.role.wake('jobs');
    return job;
  }

  /** A job of this API key; NOT_FOUND naming the field otherwise. */
  get(apiKey: string, jobId: string, field = 'data.jobId'): JobRecord {
    const job = this.db.get([apiKey, jobId]);
    if (job === undefined) throw notFound(`${field}: no job "${jobId}" for this API key`);
    return job;
  }

  /**
   * Starts every job left pending or in progress (by a stop, a crash, or another node) that is not running here
   * already; call after every runner is registered. The worker calls it when it takes the role, on a wake-up and on
   * its periodic scan.
   */
  resume(): number {
    if (this.stopped || !this.role.held()) return 0;
    let resumed = 0;
    for (const { value } of this.db.getRange()) {
      if ((value.status === 'pending' || value.status === 'in_progress') && !this.runningIds.has(value.jobId) && !this.unrunnable.has(value.jobId)) {
        this.start(value);
        resumed++;
      }
    }
    if (resumed > 0) this.log.info('resumed background jobs', { jobs: resumed });
    return resumed;
  }

  /** Settles once every job this process started has finished (tests; jobs in flight at a stop resume next start). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** No new job starts; the ones running finish (graceful stop awaits this before the store closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  private start(job: JobRecord): void {
    // Not the worker (any more): the holder runs it. A job already running here finishes (see docs/cluster.md).
    if (this.stopped || !this.role.held() || this.runningIds.has(job.jobId)) return;
    const runner = this.runners.get(job.kind);
    if (runner === undefined) {
      // Said once per job: the worker's scan comes back to it every few seconds.
      if (!this.unrunnable.has(job.jobId)) this.log.error('no runner for a stored job; it stays pending', { kind: job.kind, jobId: job.jobId });
      this.unrunnable.add(job.jobId);
      return;
    }
    this.runningIds.add(job.jobId);
    const run = this.run(job, runner).finally(() => {
      this.running.delete(run);
      this.runningIds.delete(job.jobId);
    });
    this.running.add(run);
  }

  private async run(job: JobRecord, runner: JobRunner<unknown, unknown>): Promise<void> {
    try {
      await this.save({ ...job, status: 'in_progress', updatedAt: this.now() });
      const result = await this.runOrForward(job, runner, 0);
      await this.save({ ...job, status: 'completed', updatedAt: this.now(), ...(result === undefined ? {} : { result }) });
    } catch (error) {
      if (error instanceof AppError && error.status === 'UNAVAILABLE') {
        // Transient (a document owned by another node, the server stopping): pending again, so the worker's next
        // scan (or the next start) runs it again; jobs are idempotent.
        this.log.warn('background job postponed; it runs again', { kind: job.kind, jobId: job.jobId, reason: error.message });
        await this.save({ ...job, status: 'pending', updatedAt: this.now() }).catch((saveError: unknown) =>
          this.log.error('could not record a postponed job', { jobId: job.jobId, error: saveError }),
        );
        return;
      }
      this.log.warn('background job failed', { kind: job.kind, jobId: job.jobId, error });
      const message = error instanceof Error ? error.message : String(error);
      // A failure to record the failure (the store closing) leaves the job in progress: it runs again next start.
      await this.save({ ...job, status: 'failed', updatedAt: this.now(), error: message }).catch((saveError: unknown) =>
        this.log.error('could not record a failed job', { jobId: job.jobId, error: saveError }),
      );
    }
  }

  private async save(job: JobRecord): Promise<void> {
    await this.store.transaction(() => this.db.putSync([job.apiKey, job.jobId], job));
  }
}
