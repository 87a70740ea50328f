// Owns how far this node's applier has come in the state stream, and the callers waiting for it to pass a sequence.
import { unavailable } from '../errors.js';

interface Waiter {
  readonly seq: number;
  readonly wake: (error?: Error) => void;
}

/** The stream sequence applied to (or, for own messages, seen by) the local cache; waiters are woken as it passes theirs. */
export class AppliedSeq {
  value = 0;
  private readonly waiters = new Set<Waiter>();

  constructor(private readonly timeoutMs: number) {}

  /** Resolves once `seq` is applied; UNAVAILABLE after the timeout, or with the error `failAll` gives. */
  async reach(seq: number): Promise<void> {
    if (this.value >= seq) return;
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        seq,
        wake: (error?: Error) => {
          clearTimeout(timer);
          if (error === undefined) resolve();
          else reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(unavailable('this node is still catching up with the cluster log; retry shortly'));
      }, this.timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** The applier passed `seq`: wakes every waiter at or below it. */
  advance(seq: number): void {
    if (seq <= this.value) return;
    this.value = seq;
    for (const waiter of [...this.waiters]) {
      if (waiter.seq > seq) continue;
      this.waiters.delete(waiter);
      waiter.wake();
    }
  }

  /** The applier can no longer pass anything (it fell behind a purge): every waiter fails with `error`. */
  failAll(error: Error): void {
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter);
      waiter.wake(error);
    }
  }
}
