// Owns the group commit of REST writes: every change of a turn in one LMDB transaction, each that may be refused in its own child transaction.
import { groupCommitInstrument } from '../metrics/instruments.js';

const instrument = groupCommitInstrument('rest');

/** The two lmdb-js calls the group commit needs (a RootDatabase; tests pass one whose commit fails). */
export interface TransactionRoot {
  /** lmdb-js batched write: the callbacks of one turn share one transaction; resolves once it committed. */
  transaction<T>(body: () => T): Promise<T>;
  /** Inside a write transaction: runs `body` synchronously in a nested transaction that aborts if it throws. */
  childTransaction<T>(body: () => T): Promise<T>;
}

export interface GroupedChange {
  /**
   * Synchronous LMDB writes. They run in their own child transaction: throwing aborts exactly these writes. A change
   * of one put or remove (`single`) runs without one: that write lands whole or not at all by itself.
   */
  write(): void;
  /**
   * Exactly one put or remove: no child transaction is needed (it saves a nested begin and commit per change). A
   * write lmdb-js refuses before touching LMDB (a key too large) leaves the batch intact; one that fails inside LMDB
   * fails the whole transaction, and then every change of the batch is told so — wider, still all-or-nothing.
   */
  readonly single?: boolean;
  /**
   * lmdb-js cannot refuse these writes (the change checked that every key it writes fits, `keyFits` in src/limits.ts)
   * and nothing else in them throws: they run without a child transaction of their own, which saves a nested begin
   * and commit and the copies of every page they touch. The batch's writes then run in one child transaction, so
   * should such a write throw after all, nothing of the batch lands and every change of it is told so, as when a
   * commit fails. Read right before `write` runs, so a getter may answer from the state `write` will see.
   */
  readonly bounded?: boolean;
  /**
   * Nobody waits for this change (a sync connection's presence row): alone, it may wait up to the group commit's
   * `deferMs` for other changes to share its transaction. Any other change, `hurry()` or a barrier commits it at the
   * end of the turn, in its place in the order.
   */
  readonly deferrable?: boolean;
  /**
   * `write` only writes to LMDB (no other effect), so running it again after its writes were rolled back writes the
   * same. Consecutive repeatable changes share one child transaction; when one of them throws, that child is rolled
   * back and they run again one child transaction each, so the one that throws still loses only its own writes. Why:
   * LMDB mallocs ~3 MB for every child transaction (a nested dirty list and free list), and one per document of a
   * commit ratcheted glibc's main heap up by ~20 MB in a 20-document burst (bench/README.md, "Twenty-second session:
   * memory after a burst").
   */
  readonly repeatable?: boolean;
  /**
   * Told exactly once, in submission order: `undefined` once the transaction holding the writes has committed, else
   * why they did not land. A `write` that throws is told at once, inside the batch, before any later change's
   * `write` runs, so a change that depends on it can refuse to run.
   */
  settle(error: unknown): void;
}

/**
 * Gathers changes until the end of the turn (setImmediate: uWS delivers every request read in one poll phase before
 * the check phase), then writes them in one LMDB transaction. At most one batch is in flight: a batch's changes run
 * only after the previous batch has settled, so a change never commits on top of an earlier one whose commit failed
 * and nobody knew yet. Changes submitted meanwhile wait and form the next batch (its size follows the load). When
 * every queued change is deferrable, the batch waits up to `deferMs` instead of the end of the turn.
 */
export class GroupCommit {
  private queued: GroupedChange[] = [];
  /** Whether a change in `queued` must not wait: the next transaction then starts at the end of the turn. */
  private urgent = false;
  private inFlight = false;
  private scheduled: NodeJS.Immediate | undefined;
  /** Armed while only deferrable changes are queued (and none in flight): starts the transaction after `deferMs`. */
  private deferred: NodeJS.Timeout | undefined;
  private idleWaiters: Array<() => void> = [];
  private closed: Error | undefined;

  /**
   * `afterCommit` (cluster mode, src/store/env.ts): told once a batch's LMDB commit ended (`failed` or not); the
   * changes are told only after the promise it returns settles, and told its error when it rejects. `deferMs`: how
   * long deferrable changes alone may wait for company (GROUP_COMMIT_MS; 0: the end of the turn, like every other change).
   */
  constructor(
    private readonly root: TransactionRoot,
    private readonly onSettleError: (error: unknown) => void,
    private readonly afterCommit?: (failed: boolean) => Promise<void> | undefined,
    private readonly deferMs = 0,
  ) {}

  /** Changes queued, plus one while a batch is in flight: 0 means everything submitted has settled. */
  get pending(): number {
    return this.queued.length + (this.inFlight ? 1 : 0);
  }

  submit(change: GroupedChange): void {
    if (this.closed !== undefined) {
      const error = this.closed;
      queueMicrotask(() => this.tell(change, error));
      return;
    }
    this.queued.push(change);
    if (change.deferrable !== true || this.deferMs === 0) this.urgent = true;
    if (!this.inFlight) this.schedule();
  }

  /** Someone waits for what is queued (a reader that must not show an uncommitted change): no deferral for it. */
  hurry(): void {
    if (this.queued.length === 0) return;
    this.urgent = true;
    if (!this.inFlight) this.schedule();
  }

  /** Starts the next transaction at the end of the turn, or after `deferMs` when every queued change may wait. */
  private schedule(): void {
    if (this.scheduled !== undefined) return;
    if (this.urgent) {
      if (this.deferred !== undefined) clearTimeout(this.deferred);
      this.deferred = undefined;
      this.scheduled = setImmediate(() => this.issue());
    } else {
      // Not unref'd: a stop waits for it through settled(), and it is at most deferMs away.
      this.deferred ??= setTimeout(() => {
        this.deferred = undefined;
        this.scheduled ??= setImmediate(() => this.issue());
      }, this.deferMs);
    }
  }

  /** Resolves once every change submitted so far has settled (and whatever was submitted while waiting). */
  settled(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Resolves once every change submitted before this call has settled; later ones are not waited for. */
  barrier(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    // Changes settle in submission order, so an empty change submitted now settles right after the last of them.
    return new Promise((resolve) => this.submit({ write: nothing, single: true, settle: () => resolve() }));
  }

  /** Refuses changes submitted from now on (the store is closing); those queued still commit. */
  close(reason: Error): void {
    this.closed = reason;
  }

  private issue(): void {
    this.scheduled = undefined;
    if (this.queued.length === 0) return this.wakeIdle();
    this.inFlight = true;
    let batch: GroupedChange[] | undefined;
    /** Changes whose write threw: told already, so left out when the batch settles. */
    const refused = new Set<GroupedChange>();
    // The batch is taken when lmdb-js runs the callback, not now: what arrives until the transaction starts joins it.
    // A bounded change's throw leaves `writeAll` and aborts the batch's child transaction; lmdb-js then rejects
    // `committing` with it, and every change not told yet is told that error (below).
    const run = (): void => {
      const taken = (batch = this.take());
      if (taken.some(isBounded)) this.root.childTransaction(() => this.writeAll(taken, refused, true));
      else this.writeAll(taken, refused, false);
    };
    let committing: Promise<unknown>;
    const started = performance.now();
    try {
      committing = this.root.transaction(run);
    } catch (error) {
      // lmdb-js throws synchronously when the environment is closed.
      committing = Promise.reject(error);
    }
    committing.then(
      () => {
        instrument.observe(batch?.length ?? 0, (performance.now() - started) / 1000);
        const published = this.afterCommit?.(false);
        if (published === undefined) this.finish(batch ?? [], refused, undefined);
        else published.then(() => this.finish(batch ?? [], refused, undefined), (error: unknown) => this.finish(batch ?? [], refused, error));
      },
      // A transaction that failed before running the callback fails what it would have carried.
      (error: unknown) => {
        void this.afterCommit?.(true);
        this.finish(batch ?? this.take(), refused, error ?? new Error('commit failed'));
      },
    );
  }

  /**
   * Runs the batch's writes: a change that may be refused in its own child transaction, told at once when it is;
   * consecutive repeatable changes in one (`together`). A bounded one runs bare only inside the batch's child
   * (`inBatchChild`): one that became bounded after the batch was looked at (a delivery config written earlier in the
   * batch) is written like any other.
   */
  private writeAll(batch: readonly GroupedChange[], refused: Set<GroupedChange>, inBatchChild: boolean): void {
    for (let at = 0; at < batch.length; ) {
      // Read now, right before its write, as `bounded` promises.
      if (inBatchChild && (batch[at] as GroupedChange).bounded === true) {
        (batch[at] as GroupedChange).write();
        at++;
        continue;
      }
      const end = repeatableRun(batch, at);
      if (end - at < 2 || !this.together(batch, at, end)) for (let i = at; i < end; i++) this.writeOne(batch[i] as GroupedChange, refused);
      at = end;
    }
  }

  /** Writes `batch[at..end)` in one child transaction; false when one of them threw (then none of them landed). */
  private together(batch: readonly GroupedChange[], at: number, end: number): boolean {
    try {
      this.root.childTransaction(() => {
        for (let i = at; i < end; i++) (batch[i] as GroupedChange).write();
      });
      return true;
    } catch {
      // Rolled back whole: the caller writes each again in a child transaction of its own and tells the one that throws.
      return false;
    }
  }

  private writeOne(change: GroupedChange, refused: Set<GroupedChange>): void {
    try {
      if (change.single === true) change.write();
      else this.root.childTransaction(() => change.write());
    } catch (error) {
      refused.add(change);
      this.tell(change, error);
    }
  }

  private take(): GroupedChange[] {
    const taken = this.queued;
    this.queued = [];
    this.urgent = false;
    return taken;
  }

  private finish(batch: readonly GroupedChange[], refused: ReadonlySet<GroupedChange>, error: unknown): void {
    for (const change of batch) if (!refused.has(change)) this.tell(change, error);
    this.inFlight = false;
    // What arrived during the commit has waited long enough: it goes now, with whatever this turn still adds to it
    // (deferrable changes alone wait for company, as when they arrive with nothing in flight).
    if (this.urgent) this.issue();
    else if (this.queued.length > 0) this.schedule();
    else this.wakeIdle();
  }

  private tell(change: GroupedChange, error: unknown): void {
    try {
      change.settle(error);
    } catch (failure) {
      // One change's bookkeeping must not stop the others from being told.
      this.onSettleError(failure);
    }
  }

  private wakeIdle(): void {
    if (this.pending > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

function isBounded(change: GroupedChange): boolean {
  return change.bounded === true;
}

/** The end of the run of repeatable, not single changes that starts at `at`; `at + 1` when there is none there. */
function repeatableRun(batch: readonly GroupedChange[], at: number): number {
  let end = at;
  while (end < batch.length && batch[end]?.repeatable === true && batch[end]?.single !== true) end++;
  return Math.max(end, at + 1);
}

function nothing(): void {
  // A barrier writes nothing; it only takes its place in the order.
}
