// Owns the server's notion of time: wall-clock reads and timers behind one seam, so tests can move time forward.

/** What the server asks of time. Production uses `systemClock`; a test passes a clock it advances by hand. */
export interface Clock {
  /** Milliseconds since epoch. */
  now(): number;
  /** Runs `fn` once, `ms` from now (`unref`: the timer does not keep the process alive). Returns a function that cancels it. */
  setTimer(fn: () => void, ms: number, options?: { readonly unref?: boolean }): () => void;
}

/** setTimeout holds at most 2^31-1 ms; a longer delay is re-armed until it is due. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * clearTimeout that leaves nothing behind. Node keeps one timer list per distinct delay and drops an emptied list on
 * clearTimeout only for a ref'd timer: an unref'd one cleared early leaves its empty list (~150 bytes with its queue
 * slot) until the delay would have passed. A socket's token deadline is such a timer, with a delay of its own to the
 * millisecond, so every closed connection kept one for up to the token's lifetime (48 h by default). ref() first
 * makes the clear drop it; on a timer that already fired both are no-ops.
 */
export function clearTimer(timer: NodeJS.Timeout): void {
  timer.ref();
  clearTimeout(timer);
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms, options) {
    const due = Date.now() + ms;
    let timer: NodeJS.Timeout;
    const arm = (delay: number): void => {
      timer = setTimeout(() => {
        const left = due - Date.now();
        if (left > 0) arm(left);
        else fn();
      }, Math.min(Math.max(delay, 0), MAX_TIMER_MS));
      if (options?.unref === true) timer.unref();
    };
    arm(ms);
    return () => clearTimer(timer);
  },
};
