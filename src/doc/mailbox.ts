// Owns the actor mailbox: a bounded FIFO of tasks drained by exactly one loop, so an actor's state has one writer.
import { resourceExhausted } from '../errors.js';
import { mailboxCounts } from '../metrics/instruments.js';

type Task = () => unknown;

interface Job {
  readonly task: Task;
  readonly resolve: (value: unknown) => void;
  /** undefined: a fire-and-forget task, whose failure goes to the mailbox's TaskFailures. */
  readonly reject: ((error: unknown) => void) | undefined;
}

/** Receives failures of fire-and-forget tasks (tell), which have nobody awaiting them. */
export interface TaskFailures {
  taskFailed(error: unknown): void;
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';

export class Mailbox {
  // The queue and the idle waiters exist only while there is something in them: most mailboxes are idle most of
  // the time, and an object (the owner, not a closure) receives failures, so an idle mailbox is one small object.
  private queue: Array<Job | undefined> | undefined;
  private head = 0;
  private draining = false;
  private idleWaiters: Array<() => void> | undefined;

  constructor(private readonly capacity: number, private readonly failures: TaskFailures) {}

  get size(): number {
    return this.queue === undefined ? 0 : this.queue.length - this.head;
  }

  get idle(): boolean {
    return !this.draining && this.size === 0;
  }

  /**
   * Queues a task and resolves with its result (awaiting it when it returns a promise, before the next task runs).
   * Rejects RESOURCE_EXHAUSTED when the mailbox is full, unless `force` (lifecycle tasks such as detach must run).
   * When the mailbox is idle the task starts synchronously, inside the caller's turn.
   */
  ask<T>(task: () => T | Promise<T>, force = false): Promise<T> {
    if (!force && this.size >= this.capacity) {
      mailboxCounts.shed++;
      return Promise.reject(resourceExhausted(`the document is busy: ${this.capacity} operations are queued; retry shortly`, 1));
    }
    return new Promise<T>((resolve, reject) => this.enqueue({ task, resolve: resolve as (value: unknown) => void, reject }));
  }

  /** Fire-and-forget: false when the mailbox is full and the task was not queued (the caller sheds the sender). */
  tell(task: () => unknown, force = false): boolean {
    if (!force && this.size >= this.capacity) {
      mailboxCounts.shed++;
      return false;
    }
    this.enqueue({ task, resolve: noop, reject: undefined });
    return true;
  }

  private enqueue(job: Job): void {
    (this.queue ??= []).push(job);
    if (!this.draining) void this.drain();
  }

  /** Resolves once the queue is empty and no task is running. */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => (this.idleWaiters ??= []).push(resolve));
  }

  private async drain(): Promise<void> {
    this.draining = true;
    // Only drain replaces the queue, after this loop: tasks queued while it runs land in this array.
    const queue = this.queue ?? [];
    while (this.head < queue.length) {
      const job = queue[this.head];
      // Drop the reference so a finished task's closure can be collected while the loop runs on.
      queue[this.head++] = undefined;
      if (job === undefined) continue;
      // Compact occasionally so a long-lived busy mailbox does not keep a growing array of spent slots.
      if (this.head > 1024 && this.head * 2 > queue.length) {
        queue.splice(0, this.head);
        this.head = 0;
      }
      try {
        const result = job.task();
        job.resolve(isThenable(result) ? await result : result);
      } catch (error) {
        if (job.reject === undefined) this.failures.taskFailed(error);
        else job.reject(error);
      }
    }
    this.queue = undefined;
    this.head = 0;
    this.draining = false;
    const waiters = this.idleWaiters;
    this.idleWaiters = undefined;
    if (waiters !== undefined) for (const wake of waiters) wake();
  }
}

function noop(): void {
  // Fire-and-forget jobs have no caller waiting for the result.
}
