// Owns the piscina worker pool: its size, the queue limit (RESOURCE_EXHAUSTED past it), per-task time limit and cancellation.
import type { Piscina } from 'piscina';
import { resourceExhausted } from '../errors.js';
import { RunError, TIME_LIMIT_EXIT, type PoolTask, type TaskFailure, type TimedTask } from './tasks.js';

export interface PoolOptions {
  readonly size: number;
  readonly queueLimit: number;
  readonly taskTimeoutMs: number;
}

/** Under tsx (tests, `npm run dev`) this file is .ts and so is the worker; in dist/ both are .js. */
const workerFile = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url).href;

const isFailure = (value: unknown): value is TaskFailure => typeof value === 'object' && value !== null && (value as { failed?: unknown }).failed === true;

export class AgentPool {
  private piscina: Piscina | undefined;
  private opening: Promise<Piscina> | undefined;
  private closed = false;

  constructor(private readonly options: PoolOptions) {}

  /**
   * Made on first use, so a server that runs no agent starts no thread. Then every worker is kept (minThreads =
   * size): a worker ended by a cancel or a time limit is replaced at once, and the next task does not wait for a
   * thread to boot. (With minThreads 0, piscina 5 left a task queued behind an aborted worker with no thread to run it.)
   * piscina itself is imported then too: loaded at start it was ~0.4 MB of every idle server's anonymous memory.
   */
  private open(): Promise<Piscina> {
    this.opening ??= import('piscina').then(({ Piscina: Pool }) => {
      this.piscina = new Pool({ filename: workerFile, minThreads: this.options.size, maxThreads: this.options.size, maxQueue: this.options.queueLimit, idleTimeout: 60_000, concurrentTasksPerWorker: 1 });
      return this.piscina;
    });
    return this.opening;
  }

  /** Tasks waiting for a worker. */
  get queued(): number {
    return this.piscina?.queueSize ?? 0;
  }

  /** Refuses at once when the queue is full, so the caller can answer RESOURCE_EXHAUSTED before recording anything. */
  admit(): void {
    if (this.closed) throw new RunError('UNAVAILABLE', 'the agent pool is stopping');
    if (this.piscina !== undefined && this.piscina.queueSize >= this.options.queueLimit) {
      throw resourceExhausted(`the agent queue is full (${this.options.queueLimit} waiting; AGENT_QUEUE_LIMIT); retry later`, 5);
    }
  }

  /**
   * Runs `task` in a worker. Resolves with its result, or rejects with a RunError: TIMEOUT past the time limit,
   * CANCELLED when `cancel` fires (piscina ends the worker thread, so the work really stops), WORKER_CRASHED when
   * the thread dies, or the code the task failed with.
   */
  async run<T>(task: PoolTask, cancel?: AbortSignal): Promise<T> {
    this.admit();
    // The time limit runs in the worker from the moment it starts the task (a queued task is not timed); this outer
    // bound only catches a worker that never answers at all.
    const stuck = AbortSignal.timeout(this.options.taskTimeoutMs * 3 + 60_000);
    const signal = cancel === undefined ? stuck : AbortSignal.any([stuck, cancel]);
    const envelope: TimedTask = { task, timeLimitMs: this.options.taskTimeoutMs };
    const pool = await this.open();
    if (this.closed) throw new RunError('UNAVAILABLE', 'the agent pool is stopping');
    let result: unknown;
    try {
      result = await pool.run(envelope, { signal });
    } catch (error) {
      if (cancel?.aborted === true) throw new RunError('CANCELLED', 'the run was cancelled');
      if (stuck.aborted || (error instanceof Error && error.message.includes(`code: ${TIME_LIMIT_EXIT}`))) {
        throw new RunError('TIMEOUT', `the run took longer than ${this.options.taskTimeoutMs} ms (AGENT_RUN_TIMEOUT_MS)`);
      }
      if (error instanceof Error && /queue is at limit/i.test(error.message)) throw resourceExhausted('the agent queue is full; retry later', 5);
      throw new RunError('WORKER_CRASHED', `the worker running this task stopped: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (isFailure(result)) throw new RunError(result.code, result.message);
    return result as T;
  }

  /** Threads alive and tasks waiting (diagnostics). */
  stats(): { threads: number; queued: number; utilization: number } {
    return { threads: this.piscina?.threads.length ?? 0, queued: this.queued, utilization: this.piscina?.utilization ?? 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    // A pool still being made when the stop began is destroyed once made (its threads would otherwise stay). A failed
    // import made no pool, and the run that asked for it already failed with that error.
    const pool = await this.opening?.catch(() => undefined);
    await pool?.destroy();
  }
}
