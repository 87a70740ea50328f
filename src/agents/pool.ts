// Owns the piscina worker pool: its size, admission (the queue and per-key limits, RESOURCE_EXHAUSTED past them), fair start order, per-task time limit and cancellation.
import type { Piscina } from 'piscina';
import { FairQueue, type Ticket } from './fair-queue.js';
import { RunError, TIME_LIMIT_EXIT, type PoolTask, type TaskFailure, type TimedTask } from './tasks.js';

export type { Ticket } from './fair-queue.js';

export interface PoolOptions {
  readonly size: number;
  readonly queueLimit: number;
  readonly taskTimeoutMs: number;
  /** Tasks one API key may have waiting or running; default `defaultTasksPerKey(size, queueLimit)`. */
  readonly perKeyLimit?: number;
}

/**
 * A key alone may use every thread and a quarter of the queue (at least one place): enough for one workspace's burst,
 * while three others' bursts still find room in the queue.
 */
export const defaultTasksPerKey = (size: number, queueLimit: number): number => size + Math.max(1, Math.floor(queueLimit / 4));

/** Under tsx (tests, `npm run dev`) this file is .ts and so is the worker; in dist/ both are .js. */
const workerFile = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url).href;

const isFailure = (value: unknown): value is TaskFailure => typeof value === 'object' && value !== null && (value as { failed?: unknown }).failed === true;

export class AgentPool {
  private piscina: Piscina | undefined;
  private opening: Promise<Piscina> | undefined;
  private closed = false;
  /**
   * Tasks wait here, not in piscina's FIFO queue: one key's backlog must not hold every other key's tasks behind it.
   * piscina is handed a task only when a thread is free, so its own queue holds at most the tasks handed over while a
   * thread ended by a cancel or time limit is replaced.
   */
  private readonly queue: FairQueue;

  constructor(private readonly options: PoolOptions) {
    this.queue = new FairQueue({ slots: options.size, queueLimit: options.queueLimit, perKey: options.perKeyLimit ?? defaultTasksPerKey(options.size, options.queueLimit) });
  }

  /**
   * Made on first use, so a server that runs no agent starts no thread. Then every worker is kept (minThreads =
   * size): a worker ended by a cancel or a time limit is replaced at once, and the next task does not wait for a
   * thread to boot. (With minThreads 0, piscina 5 left a task queued behind an aborted worker with no thread to run it.)
   * piscina itself is imported then too: loaded at start it was ~0.4 MB of every idle server's anonymous memory.
   */
  private open(): Promise<Piscina> {
    this.opening ??= import('piscina').then(({ Piscina: Pool }) => {
      this.piscina = new Pool({ filename: workerFile, minThreads: this.options.size, maxThreads: this.options.size, maxQueue: this.options.size, idleTimeout: 60_000, concurrentTasksPerWorker: 1 });
      return this.piscina;
    });
    return this.opening;
  }

  /** Tasks waiting for a worker. */
  get queued(): number {
    return this.queue.waiting;
  }

  /**
   * Takes a place for one task of `apiKey`, or refuses at once (RESOURCE_EXHAUSTED when the queue or the key's share
   * is full), so the caller can answer before recording anything. Hand the ticket to `run`, or release it.
   */
  admit(apiKey: string): Ticket {
    if (this.closed) throw new RunError('UNAVAILABLE', 'the agent pool is stopping');
    return this.queue.admit(apiKey);
  }

  /**
   * Runs `task` for an API key (or on a ticket `admit` gave) in a worker, once its turn comes. Resolves with its
   * result, or rejects with a RunError: TIMEOUT past the time limit, CANCELLED when `cancel` fires (waiting, the task
   * leaves the queue; running, piscina ends the worker thread, so the work really stops), UNAVAILABLE when the pool
   * stops first, WORKER_CRASHED when the thread dies, or the code the task failed with.
   */
  async run<T>(who: string | Ticket, task: PoolTask, cancel?: AbortSignal): Promise<T> {
    const ticket = typeof who === 'string' ? this.admit(who) : who;
    try {
      const pool = await this.open();
      if (this.closed) throw new RunError('UNAVAILABLE', 'the agent pool is stopping');
      await ticket.turn(cancel);
      return await this.start<T>(pool, task, cancel);
    } finally {
      ticket.release();
    }
  }

  private async start<T>(pool: Piscina, task: PoolTask, cancel: AbortSignal | undefined): Promise<T> {
    // The time limit runs in the worker from the moment it starts the task (a queued task is not timed); this outer
    // bound, started only now that a thread is free, catches a worker that never answers at all.
    const stuck = AbortSignal.timeout(this.options.taskTimeoutMs * 3 + 60_000);
    const signal = cancel === undefined ? stuck : AbortSignal.any([stuck, cancel]);
    const envelope: TimedTask = { task, timeLimitMs: this.options.taskTimeoutMs };
    let result: unknown;
    try {
      result = await pool.run(envelope, { signal });
    } catch (error) {
      if (cancel?.aborted === true) throw new RunError('CANCELLED', 'the run was cancelled');
      if (stuck.aborted || (error instanceof Error && error.message.includes(`code: ${TIME_LIMIT_EXIT}`))) {
        throw new RunError('TIMEOUT', `the run took longer than ${this.options.taskTimeoutMs} ms (AGENT_RUN_TIMEOUT_MS)`);
      }
      throw new RunError('WORKER_CRASHED', `the worker running this task stopped: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (isFailure(result)) throw new RunError(result.code, result.message);
    return result as T;
  }

  /** Tasks waiting and running, and the API keys with a task waiting (src/agents/fair-queue.ts), for /metrics. */
  occupancy(): ReturnType<FairQueue['occupancy']> {
    return this.queue.occupancy();
  }

  /** Threads alive and tasks waiting (diagnostics). */
  stats(): { threads: number; queued: number; utilization: number } {
    return { threads: this.piscina?.threads.length ?? 0, queued: this.queued, utilization: this.piscina?.utilization ?? 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    // Waiting tasks fail with UNAVAILABLE now; running ones end with their threads when the pool is destroyed.
    this.queue.close();
    // A pool still being made when the stop began is destroyed once made (its threads would otherwise stay). A failed
    // import made no pool, and the run that asked for it already failed with that error.
    const pool = await this.opening?.catch(() => undefined);
    await pool?.destroy();
  }
}
