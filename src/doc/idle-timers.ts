// Owns when an idle document's unload comes due: one timer per idle stretch, left armed through later uses.

/** What an entry keeps for its idle timer. */
export interface IdleTimed {
  /**
   * Armed when the document goes idle and left armed through later uses: it fires once per idle stretch, not once per
   * request (a clearTimeout and a setTimeout each), and waits out what is left of the delay after `idleAt`.
   */
  timer?: NodeJS.Timeout | undefined;
  /** When it last went idle (performance.now()). */
  idleAt: number;
}

export class IdleTimers<E extends IdleTimed> {
  /** `due` runs once an entry has been idle for `ms` since it last went idle, or finds it busy (`idle` says not). */
  constructor(
    private readonly ms: number,
    private readonly due: (id: string, entry: E) => void,
    private readonly idle: (entry: E) => boolean,
  ) {}

  /** The entry went idle now. */
  wentIdle(id: string, entry: E): void {
    entry.idleAt = performance.now();
    entry.timer ??= this.arm(id, entry, this.ms);
  }

  stop(entry: E): void {
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  private arm(id: string, entry: E, ms: number): NodeJS.Timeout {
    // An idle document must not keep the process alive; stop() snapshots whatever is still loaded.
    return setTimeout(() => this.fired(id, entry), ms).unref();
  }

  /** Used since the timer was armed and idle again: it waits out the rest. Busy: `due` finds it so (and does nothing). */
  private fired(id: string, entry: E): void {
    entry.timer = undefined;
    const left = entry.idleAt + this.ms - performance.now();
    if (left > 1 && this.idle(entry)) entry.timer = this.arm(id, entry, left);
    else this.due(id, entry);
  }
}
