// Owns a worker's timeline: tasks due at intended times (a binary heap), fired late rather than skipped, and the one clock every thread shares.

/** Milliseconds on the machine's monotonic clock: the same in every thread and process of one machine. */
export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

interface Task {
  at: number;
  fire: (intendedAt: number) => number | undefined;
}

/**
 * Fires each task at its intended time; a task that returns a number is re-armed for that time. When the thread
 * falls behind, due tasks still fire (late, with their intended time), so the send rate holds and the lag shows
 * up as latency instead of as fewer requests (no coordinated omission). `lag` reports how late each firing was.
 */
export class Scheduler {
  private readonly heap: Task[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly lag: (lateMs: number) => void,
    private readonly end: number,
  ) {}

  /** Arms `fire` for `at` (ignored at or after the end). */
  at(at: number, fire: (intendedAt: number) => number | undefined): void {
    if (this.stopped || !(at < this.end)) return;
    this.push({ at, fire });
    this.arm();
  }

  /**
   * Fires, late, every task still due before the end (a thread that fell behind catches up here instead of
   * dropping the tail of its schedule), then stops.
   */
  finish(): void {
    for (let top = this.heap[0]; top !== undefined && !this.stopped; top = this.heap[0]) {
      this.pop();
      this.lag(nowMs() - top.at);
      const next = top.fire(top.at);
      if (next !== undefined && next < this.end) this.push({ at: next, fire: top.fire });
    }
    this.stop();
  }

  /** Drops whatever is still scheduled (an early stop). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.heap.length = 0;
  }

  private arm(): void {
    clearTimeout(this.timer);
    const top = this.heap[0];
    if (top === undefined || this.stopped) return;
    // wake a little early at most 50 ms apart: timers are coarse and the heap may change meanwhile
    this.timer = setTimeout(() => this.tick(), Math.max(0, Math.min(50, top.at - nowMs())));
  }

  private tick(): void {
    const now = nowMs();
    for (let top = this.heap[0]; top !== undefined && top.at <= now && !this.stopped; top = this.heap[0]) {
      this.pop();
      this.lag(now - top.at);
      const next = top.fire(top.at);
      if (next !== undefined && next < this.end) this.push({ at: next, fire: top.fire });
    }
    this.arm();
  }

  private push(task: Task): void {
    const heap = this.heap;
    heap.push(task);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as Task;
      if (p.at <= task.at) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = task;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && (heap[right] as Task).at < (heap[left] as Task).at ? right : left;
      if ((heap[child] as Task).at >= last.at) break;
      heap[i] = heap[child] as Task;
      i = child;
    }
    heap[i] = last;
  }
}
