// Owns one document's changes on their way to disk: applied to memory first, committed in order, undone when a commit fails.
import { AppError } from '../errors.js';
import type { GroupedWrite, Store, WriteTx } from '../store/env.js';

/** One change a document's state has already made in memory. Implemented by small classes: no closures per change. */
export interface DocumentChange {
  /** The change's LMDB writes, its outbox rows included: synchronous, committed all together or not at all. */
  write(tx: WriteTx): void;
  /** Exactly one put or remove (atomic by itself, so no child transaction is needed). */
  readonly single?: boolean;
  /** lmdb-js cannot refuse its writes: no child transaction of its own (GroupedChange.bounded; read right before `write`). */
  readonly bounded?: boolean;
  /**
   * Nobody waits for it (a sync connection's presence): the group commit may hold it for GROUP_COMMIT_MS to share a
   * transaction with others. A reader waiting in `afterPending` hurries it.
   */
  readonly deferrable?: boolean;
  /** Puts memory back as it was just before the change. Called newest change first when a commit fails. */
  undo(): void;
  /** Runs once the change has committed, in commit order (publishing it to the document's sockets). */
  committed?(): void;
}

/**
 * The actor changes memory and submits the change here, then goes on with its next task without waiting for the
 * disk; the caller awaits the promise (a REST reply goes out only after it resolves). Changes go to the store's
 * group commit in submission order and commit in that order. When one fails, it and every later change of this
 * document not yet committed fail together — each was made from memory that included the failed one — and memory is
 * restored by undoing them newest first, so what memory holds is again exactly what is committed.
 */
export class DocumentWrites {
  /** Moves on at every failure: a change made before it refuses to write (it was made on top of the failed one). */
  epoch = 0;
  private readonly inFlight: InFlight[] = [];

  constructor(private readonly store: Store) {}

  /** Changes submitted and not yet settled. */
  get pending(): number {
    return this.inFlight.length;
  }

  /** Resolves with `change` once it has committed; rejects when it (or an earlier change of this document) did not. */
  submit<C extends DocumentChange>(change: C): Promise<C> {
    const entry = new InFlight(this, change);
    this.inFlight.push(entry);
    this.store.transactionGrouped(entry);
    // The promise resolves with `change` itself, which is a C.
    return entry.promise as Promise<C>;
  }

  /**
   * Calls `then(true)` once every change submitted so far has committed (at once when none is pending), or
   * `then(false)` when one of them failed and memory was restored. Readers use it so they never show a change that
   * is not committed.
   */
  afterPending(then: (ok: boolean) => void): void {
    const last = this.inFlight[this.inFlight.length - 1];
    if (last === undefined) return then(true);
    (last.waiters ??= []).push(then);
    // Someone waits now: a deferred change must not keep them for the deferral window.
    this.store.group.hurry();
  }

  /** @internal Told by the group commit, through InFlight. */
  settle(entry: InFlight, error: unknown): void {
    // Already failed with an earlier change of this document; its write then refused to run.
    if (entry.settled) return;
    if (error === undefined) return this.committed(entry);
    const failed = this.inFlight.splice(this.inFlight.indexOf(entry));
    this.epoch++;
    for (let i = failed.length - 1; i >= 0; i--) (failed[i] as InFlight).change.undo();
    for (const each of failed) each.fail(each === entry ? error : superseded(error));
  }

  private committed(entry: InFlight): void {
    // Commits arrive in submission order and a failure removes every later change, so this is the oldest one.
    if (this.inFlight[0] !== entry) throw new Error('document changes committed out of order');
    this.inFlight.shift();
    entry.succeed();
  }
}

/** A submitted change as the group commit sees it, and the promise its submitter awaits. */
class InFlight implements GroupedWrite {
  readonly epoch: number;
  readonly single: boolean;
  readonly deferrable: boolean;
  readonly promise: Promise<DocumentChange>;
  settled = false;
  waiters: Array<(ok: boolean) => void> | undefined;
  private resolve!: (change: DocumentChange) => void;
  private reject!: (error: unknown) => void;

  constructor(private readonly owner: DocumentWrites, readonly change: DocumentChange) {
    this.epoch = owner.epoch;
    this.single = change.single === true;
    this.deferrable = change.deferrable === true;
    this.promise = new Promise<DocumentChange>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /**
   * Not once an earlier change of this document failed: then `write` throws (below), and that throw must stay this
   * change's, not abort the whole batch.
   */
  get bounded(): boolean {
    return this.epoch === this.owner.epoch && this.change.bounded === true;
  }

  write(tx: WriteTx): void {
    // An earlier change of this document failed in this same batch: this one was made on top of it.
    if (this.epoch !== this.owner.epoch) throw superseded(undefined);
    this.change.write(tx);
  }

  settle(error: unknown): void {
    this.owner.settle(this, error);
  }

  succeed(): void {
    this.settled = true;
    this.resolve(this.change);
    try {
      this.change.committed?.();
    } finally {
      this.wake(true);
    }
  }

  fail(error: unknown): void {
    this.settled = true;
    this.reject(error);
    this.wake(false);
  }

  private wake(ok: boolean): void {
    const waiters = this.waiters;
    this.waiters = undefined;
    if (waiters !== undefined) for (const then of waiters) then(ok);
  }
}

/** Why a change that was fine in itself did not land: a change made before it failed to commit. */
export function superseded(cause: unknown): AppError {
  return new AppError('ABORTED', 'an earlier change to this document failed to commit, so this one was not written; retry', { cause });
}
