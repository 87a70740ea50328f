// Test helper: a Clock (src/clock.ts) that moves only when the test advances it, running timers as they fall due.
import type { Clock } from '../../src/clock.js';

interface Timer {
  readonly due: number;
  readonly fn: () => void;
}

export class ManualClock implements Clock {
  private current: number;
  private readonly timers = new Set<Timer>();

  /** Starts at the real time, so tokens signed with it look ordinary to anyone else. */
  constructor(start = Date.now()) {
    this.current = start;
  }

  readonly now = (): number => this.current;

  setTimer(fn: () => void, ms: number): () => void {
    const timer: Timer = { due: this.current + Math.max(0, ms), fn };
    this.timers.add(timer);
    return () => this.timers.delete(timer);
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way (in due order, ones they set included). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const timer of this.timers) if (timer.due <= target && (next === undefined || timer.due < next.due)) next = timer;
      if (next === undefined) break;
      this.timers.delete(next);
      this.current = Math.max(this.current, next.due);
      next.fn();
    }
    this.current = target;
  }
}
