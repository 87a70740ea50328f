// Owns admission of REST requests around a graceful stop: counts the requests in flight and refuses new ones once closing.
import { systemClock, type Clock } from '../clock.js';

export class RequestGate {
  private inFlight = 0;
  private closing = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly clock: Clock = systemClock) {}

  /** True once a stop has begun: nothing new is admitted (REST requests, sync upgrades). */
  get closed(): boolean {
    return this.closing;
  }

  /** Requests admitted and not yet finished. */
  get size(): number {
    return this.inFlight;
  }

  /** Admits one request; false once the gate is closing (the caller answers UNAVAILABLE). */
  enter(): boolean {
    if (this.closing) return false;
    this.inFlight++;
    return true;
  }

  /** One admitted request is finished: answered, or its client left before its operation started. */
  leave(): void {
    this.inFlight--;
    if (this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /**
   * Refuses every request from now on and resolves once those in flight are finished: true, or false when
   * `timeoutMs` passed first (a stuck request must not hold a stop forever).
   */
  close(timeoutMs: number): Promise<boolean> {
    this.closing = true;
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const cancel = this.clock.setTimer(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        cancel();
        resolve(true);
      });
    });
  }
}
