// Owns the durable timer queue of deliveries (DB.deliveryJobs, its due index, DB.deliveryFinished): enqueue in a caller's transaction, take due jobs, settle, prune.
import type { Database, Key } from 'lmdb';
import type { WriteTx } from '../store/env.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { DueIndex, type Slots } from './due-index.js';

/** `account`: the server's own emails to workspace owners (src/delivery/channels/account-email.ts), about no API key. */
export type ChannelName = 'email' | 'webhook' | 'advancedWebhook' | 'notification' | 'account';

/** `pending`: waits for `due`; `delivered` and `failed` are final (`failed` keeps `lastError`); `cancelled`: its target went away. */
export type JobState = 'pending' | 'delivered' | 'failed' | 'cancelled';

export interface DeliveryJob {
  /** Deterministic from the event and target, so planning an event twice (a crash before its ack) enqueues once. */
  readonly id: string;
  readonly channel: ChannelName;
  readonly apiKey: string;
  /** Concurrency and rate-limit key: one slow target holds only its own slots. */
  readonly target: string;
  readonly due: number;
  /** Attempts made so far. */
  readonly attempt: number;
  readonly state: JobState;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly lastError?: string;
  /** Channel-specific, fixed at planning time (rendered email, signed-over body...). */
  readonly payload: unknown;
  /**
   * The organization and document the job is about, so deleting them cancels what is still pending
   * (src/delivery/document-data.ts). A per-user notification batch spans documents: it has no documentId here, its
   * items carry theirs. Absent on rows written before these fields and on `message.attempt.exhausted` messages.
   */
  readonly organizationId?: string;
  readonly documentId?: string;
}

export type Settlement =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'retry'; readonly at: number; readonly error: string }
  | { readonly kind: 'failed'; readonly error: string }
  | { readonly kind: 'cancelled'; readonly error: string };

const FINISHED_INDEX_BUILT = 'finishedIndexBuilt';
const TARGET_INDEX_BUILT = 'targetDueIndexBuilt';

export class DeliveryQueue {
  private readonly jobs: Database<DeliveryJob, Key>;
  /** Every pending job by target and due time (src/delivery/due-index.ts). */
  private readonly dueIndex: DueIndex;
  /** [updatedAt, jobId] of every finished job: pruning reads only the rows it removes. */
  private readonly finishedIndex: Database<null, Key>;
  private readonly listeners = new Set<() => void>();
  /** Counts job writes (enqueue, replace, remove): a caller compares it before and after to know whether it wrote any. */
  private writes = 0;

  constructor(private readonly store: Store) {
    this.jobs = store.records<DeliveryJob>(DB.deliveryJobs);
    this.dueIndex = new DueIndex(store);
    this.finishedIndex = store.records<null>(DB.deliveryFinished);
  }

  /** Called after a transaction that enqueued commits, so the runner wakes for an earlier due time. */
  onEnqueue(listener: () => void): void {
    this.listeners.add(listener);
  }

  notify(): void {
    for (const listener of this.listeners) listener();
  }

  /** Job writes so far in this process (see `writes`); only differences mean anything. */
  get writeCount(): number {
    return this.writes;
  }

  get(id: string): DeliveryJob | undefined {
    return this.jobs.get(id);
  }

  /** Runs `body` (synchronous, inside one write transaction) with the due index's heads read once a target (`DueIndex.batched`). */
  batched<T>(body: () => T): T {
    return this.dueIndex.batched(body);
  }

  /** Writes a pending job unless one with this id exists; returns whether it wrote. */
  enqueue(_tx: WriteTx, job: Omit<DeliveryJob, 'state' | 'attempt' | 'updatedAt'> & { attempt?: number }): boolean {
    // Existence only: decoding the row to test it for undefined cost a read and a decode per planned job.
    if (this.jobs.doesExist(job.id)) return false;
    const row: DeliveryJob = { ...job, attempt: job.attempt ?? 0, state: 'pending', updatedAt: job.createdAt };
    this.jobs.putSync(row.id, row);
    this.dueIndex.add(row);
    this.writes++;
    return true;
  }

  /** Rewrites a pending job (a batch gaining an item, or moving its due time). */
  replace(_tx: WriteTx, job: DeliveryJob): void {
    const previous = this.jobs.get(job.id);
    if (previous !== undefined) this.unindex(previous);
    this.jobs.putSync(job.id, job);
    if (job.state === 'pending') this.dueIndex.add(job);
    else this.finishedIndex.putSync([job.updatedAt, job.id], null);
    this.writes++;
  }

  /** Drops the index row a stored job has: its due time while pending, its finishing time once finished. */
  private unindex(job: DeliveryJob): void {
    if (job.state === 'pending') this.dueIndex.remove(job);
    else this.finishedIndex.removeSync([job.updatedAt, job.id]);
  }

  /** Removes a job row (batches, once flushed, free their id for the next window). */
  remove(_tx: WriteTx, id: string): void {
    const previous = this.jobs.get(id);
    if (previous === undefined) return;
    this.unindex(previous);
    this.jobs.removeSync(id);
    this.writes++;
  }

  /**
   * Every pending job, read through the due index: finished rows (kept a week) are never scanned. With `apiKeys`, only
   * those keys' jobs: a deletion in one workspace reads none of another's backlog.
   */
  pending(apiKeys?: ReadonlySet<string>): DeliveryJob[] {
    const found: DeliveryJob[] = [];
    for (const id of this.dueIndex.ids(apiKeys)) {
      const job = this.jobs.get(id);
      if (job !== undefined && job.state === 'pending') found.push(job);
    }
    return found;
  }

  /** Cancels a pending job in the caller's transaction: it will not be attempted, and an attempt in flight settles as cancelled. */
  cancel(tx: WriteTx, job: DeliveryJob, reason: string, now: number): void {
    this.replace(tx, { ...job, state: 'cancelled', lastError: reason, updatedAt: now });
  }

  /** Without limits: every target may start every job (tests, and scans that only look). */
  static readonly unlimited: Slots = { free: () => true, take: () => true };

  /**
   * Pending jobs due at or before `now` that `slots` lets start, at most `limit`, skipping `busy` ids: targets in the
   * order of their earliest due job, a full target held back at the cost of one index read (src/delivery/due-index.ts).
   */
  due(now: number, limit: number, busy: ReadonlySet<string>, slots: Slots = DeliveryQueue.unlimited): DeliveryJob[] {
    const found: DeliveryJob[] = [];
    for (const id of this.dueIndex.due(now, limit, busy, slots)) {
      const job = this.jobs.get(id);
      if (job !== undefined && job.state === 'pending') found.push(job);
    }
    return found;
  }

  /** `target`'s earliest pending job due at or before `now` and not in `busy` (the runner's pick among unproven targets). */
  firstDue(target: string, now: number, busy: ReadonlySet<string>): DeliveryJob | undefined {
    const id = this.dueIndex.first(target, now, busy);
    const job = id === undefined ? undefined : this.jobs.get(id);
    return job?.state === 'pending' ? job : undefined;
  }

  /** Due time of the earliest pending job not in `busy` whose target `slots` has room for (jobs held back wake nobody). */
  nextDue(busy: ReadonlySet<string>, slots: Pick<Slots, 'free'> = DeliveryQueue.unlimited): number | undefined {
    return this.dueIndex.next(busy, slots);
  }

  /**
   * Records the outcome of an attempt (and the channel's own bookkeeping, in the same transaction). Settlements of
   * one event-loop turn share one LMDB transaction (the store's group commit), each all-or-nothing on its own.
   */
  settle(job: DeliveryJob, outcome: Settlement, now: number, also?: (tx: WriteTx, next: DeliveryJob) => void): Promise<DeliveryJob> {
    return new Promise((resolve, reject) => {
      let next: DeliveryJob | undefined;
      this.store.transactionGrouped({
        write: (tx) => {
          next = this.settled(tx, job, outcome, now);
          also?.(tx, next);
        },
        settle: (error) => (error === undefined && next !== undefined ? resolve(next) : reject(error ?? new Error('settlement not written'))),
      });
    });
  }

  private settled(tx: WriteTx, job: DeliveryJob, outcome: Settlement, now: number): DeliveryJob {
    const current = this.jobs.get(job.id) ?? job;
    const base = { ...current, attempt: current.attempt + 1, updatedAt: now };
    let next: DeliveryJob;
    // Cancelled while its attempt was in flight (its document was deleted): it stays cancelled, so no retry follows
    // and a channel that writes on success (in-app notifications) writes nothing.
    if (current.state === 'cancelled') {
      this.replace(tx, base);
      return base;
    }
    switch (outcome.kind) {
      case 'delivered':
        next = { ...base, state: 'delivered' };
        break;
      case 'retry':
        next = { ...base, state: 'pending', due: outcome.at, lastError: outcome.error };
        break;
      case 'failed':
        next = { ...base, state: 'failed', lastError: outcome.error };
        break;
      case 'cancelled':
        next = { ...base, state: 'cancelled', lastError: outcome.error };
        break;
    }
    this.replace(tx, next);
    return next;
  }

  /**
   * Deletes finished rows (delivered, failed, cancelled) last touched before `before`, oldest first, at most `limit`,
   * through the finished index: it reads only what it removes. They must outlive the outbox lease: a row deleted while
   * its event could still be replanned would let that event enqueue again.
   */
  prune(before: number, limit = 1000): Promise<number> {
    return this.store.transaction(() => {
      let removed = 0;
      for (const key of Array.from(this.finishedIndex.getKeys({ start: [0], end: [before] }))) {
        if (removed >= limit) break;
        this.jobs.removeSync((key as [number, string])[1]);
        this.finishedIndex.removeSync(key);
        removed++;
      }
      return removed;
    });
  }

  /** Indexes the finished rows written before the finished index existed (schema 3 and older), once (`Store.backfillOnce`). */
  buildFinishedIndex(): Promise<number> {
    return this.store.backfillOnce(FINISHED_INDEX_BUILT, () => {
      let indexed = 0;
      for (const { value } of this.jobs.getRange({})) {
        if (value.state === 'pending') continue;
        this.finishedIndex.putSync([value.updatedAt, value.id], null);
        indexed++;
      }
      return indexed;
    });
  }

  /**
   * Moves the pending jobs of the time index of schema 4 and older (DB.deliveryDue, [due, id] -> target) into the
   * index by target, once (`Store.backfillOnce`); the old rows are removed as they move.
   */
  buildTargetIndex(): Promise<number> {
    return this.store.backfillOnce(TARGET_INDEX_BUILT, () => {
      const old = this.store.records<string>(DB.deliveryDue);
      let moved = 0;
      for (const key of Array.from(old.getKeys({}))) {
        const job = this.jobs.get((key as [number, string])[1]);
        if (job !== undefined && job.state === 'pending') {
          this.dueIndex.add(job);
          moved++;
        }
        old.removeSync(key);
      }
      return moved;
    });
  }

  /** The pending backlog without reading it (src/delivery/due-index.ts `size`): jobs, their targets, the earliest due time. */
  backlog(): ReturnType<DueIndex['size']> {
    return this.dueIndex.size();
  }

  /** Counts by state (for logs, the bench and tests). */
  counts(): Record<JobState, number> {
    const counts: Record<JobState, number> = { pending: 0, delivered: 0, failed: 0, cancelled: 0 };
    for (const { value } of this.jobs.getRange({})) counts[value.state]++;
    return counts;
  }

  list(filter: (job: DeliveryJob) => boolean = () => true): DeliveryJob[] {
    const out: DeliveryJob[] = [];
    for (const { value } of this.jobs.getRange({})) if (filter(value)) out.push(value);
    return out;
  }
}
