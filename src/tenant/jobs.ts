// Owns durable background jobs (document migration, GDPR erase): submitted, run once, resumed after a restart, status kept.
import type { Database, Key } from 'lmdb';
import { randomId } from '../auth/secrets.js';
import { AppError, notFound, resourceExhausted } from '../errors.js';
import { DEFAULT_MAX_PENDING_JOBS_PER_KEY } from '../limits.js';
import type { Logger } from '../log.js';
import { limitRefusals } from '../metrics/instruments.js';
import type { Store } from '../store/env.js';
import { DB, KEY_END } from '../store/keys.js';
import { LocalWorkerRole, type WorkerRole } from '../worker-role.js';
import { BY_KEY, byKeyKey, isJob, isUnfinished, jobIdOf, UNFINISHED, unfinishedJobs, unfinishedKey, writeJobRow, type JobRecord, type Row } from './job-rows.js';

export type { JobRecord, JobStatus } from './job-rows.js';

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


/** Seconds a refused submit is told to wait (Retry-After): about as long as a job of a key with a backlog takes to start. */
const PENDING_RETRY_AFTER_SECONDS = 5;

/** Forwards of one run at most: a job whose documents are owned by more nodes than this waits for the next scan. */
const MAX_HOPS = 3;

/**
 * Jobs running at once in this process, and of one API key: a workspace that submits a thousand erasures must not
 * run a thousand chunked scans side by side on the event loop every workspace shares. The rest wait, still `pending`
 * (a restart resumes them from their rows), and start key by key in turn as running ones end.
 */
export const JOB_LIMITS = { running: 4, perKey: 2 } as const;

/** The owner named by a NotOwnerError (src/doc/ownership.ts; read by shape, so the tenant layer imports no document code). */
function ownerNamedBy(error: unknown): string | undefined {
  if (!(error instanceof AppError) || error.status !== 'UNAVAILABLE') return undefined;
  const owner = (error as AppError & { owner?: unknown }).owner;
  return typeof owner === 'string' ? owner : undefined;
}

export class Jobs {
  private readonly db: Database<Row, Key>;
  private readonly runners = new Map<string, JobRunner<unknown, unknown>>();
  /** Jobs running in this process, so stop() can wait for them. */
  private readonly running = new Set<Promise<void>>();
  /** Their ids, so a scan never starts a job twice in this process. */
  private readonly runningIds = new Set<string>();
  /** Jobs waiting for a slot, per API key in submission order; the keys in the order their turn comes. */
  private readonly waiting = new Map<string, JobRecord[]>();
  /** Their ids, so a scan queues a job once. */
  private readonly waitingIds = new Set<string>();
  /** Submits being recorded, by [apiKey, kind, params] as JSON: an identical one meanwhile answers with the same job. */
  private readonly recording = new Map<string, Promise<JobRecord>>();
  /** Jobs running here per API key. */
  private readonly runningPerKey = new Map<string, number>();
  /** Stored jobs of a kind this process has no runner for (already reported). */
  private readonly unrunnable = new Set<string>();
  private stopped = false;
  private forwarding: JobForwarding | undefined;
  /** Jobs another node forwarded here, running now (`runForwarded`): counted as running in `occupancy`. */
  private forwardedRunning = 0;

  /**
   * `role`: only the holder of the worker role runs jobs (one process: always this one). A job submitted on another
   * node is recorded there and the holder is woken; the holder also scans for unfinished jobs (`resume`).
   */
  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    private readonly role: Pick<WorkerRole, 'held' | 'wake'> = new LocalWorkerRole(),
    /** MAX_PENDING_JOBS_PER_KEY: unfinished jobs (pending or in progress) one API key may have; past it submit refuses. */
    private readonly maxPendingPerKey: number = DEFAULT_MAX_PENDING_JOBS_PER_KEY,
  ) {
    this.db = store.records<Row>(DB.jobs);
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
    this.forwardedRunning++;
    return this.track(this.runOrForward(job, runner, hops)).finally(() => this.forwardedRunning--);
  }

  /** Counts `work` as running until it settles, so stop() (and the store's close after it) waits for it. */
  private track<T>(work: Promise<T>): Promise<T> {
    const tracked = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
    return work;
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

  /**
   * Records the job (committed before this resolves, so it survives a crash) and starts it here or wakes the worker.
   * A job of the same kind and params still waiting here for a slot (or being recorded) answers instead: it has not
   * begun, and does all a second would. Past `maxPendingPerKey` unfinished jobs of the key: RESOURCE_EXHAUSTED, nothing recorded.
   */
  async submit<P>(apiKey: string, kind: string, params: P, jobId = randomId(24)): Promise<JobRecord<P>> {
    const same = this.waitingLike(apiKey, kind, params);
    if (same !== undefined) return same;
    // An identical submit still being recorded: its job cannot have begun before this request came.
    const identity = JSON.stringify([apiKey, kind, params]);
    const recording = this.recording.get(identity) ?? this.record(apiKey, kind, params, jobId);
    this.recording.set(identity, recording);
    try {
      return (await recording) as JobRecord<P>;
    } finally {
      if (this.recording.get(identity) === recording) this.recording.delete(identity);
    }
  }

  private async record<P>(apiKey: string, kind: string, params: P, jobId: string): Promise<JobRecord<P>> {
    const now = this.now();
    const job: JobRecord<P> = { jobId, apiKey, kind, params, status: 'pending', createdAt: now, updatedAt: now };
    await this.store.transaction(() => {
      // The key's [1, apiKey] entries, counted in the transaction that writes the row, so two submits of one key on this
      // node never both take the last place; from the rows (every node's copy), not the holder's queue of what it read.
      const unfinishedJobs = this.db.getKeysCount({ start: [BY_KEY, apiKey], end: [BY_KEY, apiKey, KEY_END], limit: this.maxPendingPerKey });
      if (unfinishedJobs >= this.maxPendingPerKey) {
        limitRefusals.pending_jobs_per_key++;
        throw resourceExhausted(
          `this API key has ${this.maxPendingPerKey} background jobs (GDPR erasures, document migrations) pending or running, its limit (MAX_PENDING_JOBS_PER_KEY); retry when some have finished`,
          PENDING_RETRY_AFTER_SECONDS,
        );
      }
      this.write(job);
    });
    if (this.role.held()) this.start(job);
    else this.role.wake('jobs');
    return job;
  }

  /**
   * A job of `apiKey` with this kind and params waiting here for a slot (only the worker-role holder queues jobs, and
   * a queued job has not begun: one that has would miss what was written since it read it).
   */
  private waitingLike<P>(apiKey: string, kind: string, params: P): JobRecord<P> | undefined {
    const queue = this.waiting.get(apiKey);
    if (queue === undefined) return undefined;
    const wanted = JSON.stringify(params);
    return queue.find((job) => job.kind === kind && JSON.stringify(job.params) === wanted) as JobRecord<P> | undefined;
  }

  /** A job of this API key; NOT_FOUND naming the field otherwise. */
  get(apiKey: string, jobId: string, field = 'data.jobId'): JobRecord {
    const job = this.db.get([apiKey, jobId]);
    if (!isJob(job)) throw notFound(`${field}: no job "${jobId}" for this API key`);
    return job;
  }

  /**
   * Starts every job left pending or in progress (by a stop, a crash, or another node) that is not running here
   * already; call after every runner is registered. The worker calls it when it takes the role (`full`), on a wake-up
   * and on its periodic scan. Jobs start before the first await, so two scans never start one twice. Resolves with
   * how many started, once the index repairs are committed.
   * `full`: every row once (rows written before the index existed get their entry); otherwise only the index. Either
   * way an entry whose row is gone or finished is removed.
   */
  async resume(options: { readonly full?: boolean } = {}): Promise<number> {
    if (this.stopped || !this.role.held()) return 0;
    const full = options.full === true;
    let resumed = 0;
    const stale: Key[] = [];
    const unindexed: JobRecord[] = [];
    const rows = full ? this.db.getRange({}) : this.db.getRange({ start: [UNFINISHED], end: [UNFINISHED + 1] });
    for (const { key, value } of rows) {
      if (value === true) {
        // A [1, apiKey, jobId] entry (the full pass only): the job starts where the pass meets its row.
        const [, apiKey, jobId] = key as [number, string, string];
        if (!isUnfinished(this.db.get([apiKey, jobId]))) stale.push(key);
        continue;
      }
      const entry = typeof value === 'string';
      const job = entry ? this.db.get([value, jobIdOf(key)]) : value;
      if (!isUnfinished(job)) {
        if (entry) stale.push(key);
        continue;
      }
      if (!entry && (this.db.get(unfinishedKey(job.jobId)) === undefined || this.db.get(byKeyKey(job.apiKey, job.jobId)) === undefined)) unindexed.push(job);
      // The full pass meets the row itself too; start it once.
      if (entry && full) continue;
      if (!this.runningIds.has(job.jobId) && !this.waitingIds.has(job.jobId) && !this.unrunnable.has(job.jobId)) {
        this.start(job);
        resumed++;
      }
    }
    if (resumed > 0) this.log.info('resumed background jobs', { jobs: resumed });
    if (stale.length > 0 || unindexed.length > 0) await this.track(this.repairIndex(stale, unindexed));
    return resumed;
  }

  /**
   * Removes entries whose row is gone or finished and adds the missing ones of unfinished rows, each checked again
   * inside the transaction: a job may have been saved since the scan read it.
   */
  private async repairIndex(stale: readonly Key[], unindexed: readonly JobRecord[]): Promise<void> {
    let removed = 0;
    let added = 0;
    await this.store.transaction(() => {
      for (const key of stale) {
        const [tag, owner, ownJobId] = key as [number, string, string];
        if (tag === BY_KEY) {
          if (!isUnfinished(this.db.get([owner, ownJobId])) && this.db.removeSync(key)) removed++;
          continue;
        }
        const apiKey = this.db.get(key);
        if (typeof apiKey !== 'string' || isUnfinished(this.db.get([apiKey, jobIdOf(key)]))) continue;
        this.db.removeSync(key);
        this.db.removeSync(byKeyKey(apiKey, jobIdOf(key)));
        removed++;
      }
      for (const { apiKey, jobId } of unindexed) {
        if (!isUnfinished(this.db.get([apiKey, jobId]))) continue;
        const entries: Array<[Key, Row]> = [[unfinishedKey(jobId), apiKey], [byKeyKey(apiKey, jobId), true]];
        const missing = entries.filter(([key]) => this.db.get(key) === undefined);
        for (const [key, value] of missing) this.db.putSync(key, value);
        if (missing.length > 0) added++;
      }
    });
    if (removed > 0) this.log.warn('removed index entries of jobs that were gone or finished', { entries: removed });
    if (added > 0) this.log.info('indexed unfinished jobs stored without their index entries (an older data directory)', { jobs: added });
  }

  /** Jobs waiting here for a slot (tests, diagnostics). */
  get queued(): number {
    return this.waitingIds.size;
  }

  /**
   * For /metrics: jobs running in this process (started here as the worker-role holder, or forwarded here by it) and
   * jobs waiting here for a slot (JOB_LIMITS). Only the holder queues jobs; an unfinished job another node recorded
   * counts once the holder's wake-up or scan has read it.
   */
  occupancy(): { readonly running: number; readonly waiting: number } {
    return { running: this.runningIds.size + this.forwardedRunning, waiting: this.waitingIds.size };
  }

  /** Settles once every job this process started, or queued, has finished (tests; jobs in flight at a stop resume next start). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** No new job starts; the ones running finish (graceful stop awaits this before the store closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    // What waits stays pending in its row: the next start (or the next holder) resumes it.
    this.waiting.clear();
    this.waitingIds.clear();
    await this.idle();
  }

  /** Queues `job` for a slot (JOB_LIMITS) and starts what fits now. */
  private start(job: JobRecord): void {
    // Not the worker (any more): the holder runs it. A job already running here finishes (see docs/cluster.md).
    if (this.stopped || !this.role.held() || this.runningIds.has(job.jobId) || this.waitingIds.has(job.jobId)) return;
    if (!this.runners.has(job.kind)) {
      // Said once per job: the worker's scan comes back to it every few seconds.
      if (!this.unrunnable.has(job.jobId)) this.log.error('no runner for a stored job; it stays pending', { kind: job.kind, jobId: job.jobId });
      this.unrunnable.add(job.jobId);
      return;
    }
    const queue = this.waiting.get(job.apiKey);
    if (queue === undefined) this.waiting.set(job.apiKey, [job]);
    else queue.push(job);
    this.waitingIds.add(job.jobId);
    this.dispatch();
  }

  /**
   * Starts waiting jobs while slots are free: each key's first job in turn, a key that got one moving to the back, a
   * key at its own limit passed over. Without the role (or stopped) nothing waits: the holder resumes from the rows.
   */
  private dispatch(): void {
    if (this.stopped || !this.role.held()) {
      this.waiting.clear();
      this.waitingIds.clear();
      return;
    }
    while (this.runningIds.size < JOB_LIMITS.running) {
      const apiKey = [...this.waiting.keys()].find((key) => (this.runningPerKey.get(key) ?? 0) < JOB_LIMITS.perKey);
      if (apiKey === undefined) return;
      const queue = this.waiting.get(apiKey) ?? [];
      const job = queue.shift();
      this.waiting.delete(apiKey);
      if (queue.length > 0) this.waiting.set(apiKey, queue);
      if (job === undefined) continue;
      this.waitingIds.delete(job.jobId);
      this.run(job);
    }
  }

  private run(job: JobRecord): void {
    const runner = this.runners.get(job.kind);
    if (runner === undefined) return;
    this.runningIds.add(job.jobId);
    this.runningPerKey.set(job.apiKey, (this.runningPerKey.get(job.apiKey) ?? 0) + 1);
    const run = this.attempt(job, runner).finally(() => {
      this.running.delete(run);
      this.runningIds.delete(job.jobId);
      const left = (this.runningPerKey.get(job.apiKey) ?? 1) - 1;
      if (left <= 0) this.runningPerKey.delete(job.apiKey);
      else this.runningPerKey.set(job.apiKey, left);
      this.dispatch();
    });
    this.running.add(run);
  }

  private async attempt(job: JobRecord, runner: JobRunner<unknown, unknown>): Promise<void> {
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

  /** The stored jobs of `kind` pending or in progress, on any node's behalf (a document migration's start-up holds). */
  unfinished(kind: string): JobRecord[] {
    return unfinishedJobs(this.db, kind);
  }

  /**
   * Only inside a transaction: records on the job's row how far it has come, committed with the work it describes; a
   * re-run reads it there (`get`). Kept by every later status change of the job.
   */
  recordProgressInWrite(job: JobRecord, progress: string): void {
    const stored = this.db.get([job.apiKey, job.jobId]);
    this.write({ ...(isJob(stored) ? stored : job), progress });
  }

  private async save(job: JobRecord): Promise<void> {
    await this.store.transaction(() => {
      // The record held here may predate the progress the run has recorded since: the row's stays.
      const stored = this.db.get([job.apiKey, job.jobId]);
      const progress = isJob(stored) ? stored.progress : undefined;
      this.write(progress === undefined ? job : { ...job, progress });
    });
  }

  /** The row and its index entries, in the caller's transaction (job-rows.ts). */
  private write(job: JobRecord): void {
    writeJobRow(this.db, job);
  }
}
