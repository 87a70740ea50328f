// Owns the order agent tasks start in: one queue per API key, taken round-robin, each key's share and the queue-wide bound.
import { resourceExhausted } from '../errors.js';
import { limitRefusals } from '../metrics/instruments.js';
import { RunError } from './tasks.js';

export interface FairLimits {
  /** Tasks that may run at once (the pool's threads). */
  readonly slots: number;
  /** Tasks that may wait for a slot, over every key (AGENT_QUEUE_LIMIT). */
  readonly queueLimit: number;
  /** Tasks one API key may have waiting or running (AGENT_TASKS_PER_KEY). */
  readonly perKey: number;
}

/**
 * The place one task holds from its admission until it settles: counted against its key's share from the start, and
 * against the queue until it runs. `turn` waits until a slot is the task's (it is run then); `release` gives the place
 * (and the slot) back, whatever state it is in, and may be called more than once.
 */
export interface Ticket {
  readonly apiKey: string;
  turn(cancel?: AbortSignal): Promise<void>;
  release(): void;
}

interface Waiter {
  start(): void;
  fail(error: RunError): void;
}

/** One API key's tasks: how many it holds (admitted, waiting or running) and those waiting, oldest first. */
interface Share {
  readonly apiKey: string;
  held: number;
  readonly waiting: Set<Waiter>;
}

const stopping = (): RunError => new RunError('UNAVAILABLE', 'the agent pool is stopping');
const cancelled = (): RunError => new RunError('CANCELLED', 'the run was cancelled');

/**
 * A slot goes to the key that has waited longest for one: keys that have started nothing yet first (in the order they
 * came), then the key whose last task started longest ago. So a key with a backlog gets one slot in turn with every
 * other waiting key, and a key that arrives while another's backlog runs starts next, not behind the backlog.
 */
export class FairQueue {
  private readonly shares = new Map<string, Share>();
  /** Shares that have started no task yet, in the order they were made. */
  private readonly fresh = new Set<Share>();
  /** Shares that have started a task, the one whose last task started longest ago first (moved to the back on each start). */
  private readonly served = new Set<Share>();
  private held = 0;
  private running = 0;
  private waitingCount = 0;
  private closed = false;

  constructor(private readonly limits: FairLimits) {}

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.waitingCount;
  }

  /**
   * Tasks waiting and running, and the API keys with a task waiting, for /metrics. The keys are counted over the shares,
   * one per key holding a place: at most `slots + queueLimit` of them, and only when scraped.
   */
  occupancy(): { readonly waiting: number; readonly running: number; readonly keysWaiting: number } {
    let keysWaiting = 0;
    for (const share of this.shares.values()) if (share.waiting.size > 0) keysWaiting++;
    return { waiting: this.waitingCount, running: this.running, keysWaiting };
  }

  /**
   * Takes a place for one task of `apiKey`, or refuses at once (RESOURCE_EXHAUSTED) so the caller answers before
   * recording anything. The queue's bound comes first: with every slot busy, `queueLimit` more may wait.
   */
  admit(apiKey: string): Ticket {
    if (this.closed) throw stopping();
    if (this.held >= this.limits.slots + this.limits.queueLimit) {
      limitRefusals.agent_queue++;
      throw resourceExhausted(`the agent queue is full (${this.limits.queueLimit} waiting; AGENT_QUEUE_LIMIT); retry later`, 5);
    }
    let share = this.shares.get(apiKey);
    if (share !== undefined && share.held >= this.limits.perKey) {
      limitRefusals.agent_tasks_per_key++;
      throw resourceExhausted(`this API key has ${this.limits.perKey} agent tasks waiting or running, its limit (AGENT_TASKS_PER_KEY); retry when one ends`, 5);
    }
    if (share === undefined) {
      share = { apiKey, held: 0, waiting: new Set() };
      this.shares.set(apiKey, share);
      this.fresh.add(share);
    }
    share.held++;
    this.held++;
    return this.ticket(share);
  }

  /** Fails every waiting task with UNAVAILABLE and admits nothing more; running tasks are the pool's to end. */
  close(): void {
    this.closed = true;
    for (const share of this.shares.values()) {
      for (const waiter of [...share.waiting]) waiter.fail(stopping());
    }
  }

  private ticket(share: Share): Ticket {
    let state: 'admitted' | 'waiting' | 'running' | 'released' = 'admitted';
    let waiter: Waiter | undefined;
    const leave = (): void => {
      if (waiter !== undefined && share.waiting.delete(waiter)) this.waitingCount--;
    };
    return {
      apiKey: share.apiKey,
      turn: (cancel) => {
        if (state !== 'admitted') return Promise.reject(new Error(`a ticket takes its turn once (it is ${state})`));
        if (this.closed) return Promise.reject(stopping());
        if (cancel?.aborted === true) return Promise.reject(cancelled());
        return new Promise<void>((resolve, reject) => {
          // Cancelled while waiting: the task leaves the queue; its place is given back when the caller releases it.
          const onAbort = (): void => waiter?.fail(cancelled());
          waiter = {
            start: () => {
              cancel?.removeEventListener('abort', onAbort);
              state = 'running';
              resolve();
            },
            fail: (error) => {
              cancel?.removeEventListener('abort', onAbort);
              leave();
              state = 'admitted';
              reject(error);
            },
          };
          cancel?.addEventListener('abort', onAbort, { once: true });
          state = 'waiting';
          share.waiting.add(waiter);
          this.waitingCount++;
          this.dispatch();
        });
      },
      release: () => {
        if (state === 'released') return;
        if (state === 'waiting') waiter?.fail(cancelled());
        if (state === 'running') this.running--;
        state = 'released';
        share.held--;
        this.held--;
        if (share.held === 0) {
          this.shares.delete(share.apiKey);
          this.fresh.delete(share);
          this.served.delete(share);
        }
        this.dispatch();
      },
    };
  }

  /** Starts waiting tasks while a slot is free, each from the key whose turn it is. */
  private dispatch(): void {
    if (this.closed) return;
    while (this.running < this.limits.slots) {
      const share = this.next();
      const waiter = share?.waiting.values().next().value;
      if (share === undefined || waiter === undefined) return;
      share.waiting.delete(waiter);
      this.waitingCount--;
      this.running++;
      this.fresh.delete(share);
      this.served.delete(share);
      this.served.add(share);
      waiter.start();
    }
  }

  /**
   * The first share with a waiting task. A share passed over holds only running tasks (at most `slots` such shares)
   * or tasks admitted and not yet queued (a run between its admission and its record's commit), so a scan is short.
   */
  private next(): Share | undefined {
    for (const share of this.fresh) if (share.waiting.size > 0) return share;
    for (const share of this.served) if (share.waiting.size > 0) return share;
    return undefined;
  }
}
