// Owns the event-loop delay sampler behind nodejs_eventloop_lag_{min,…,p99}_seconds: how late a timer ran, per scrape window.

/** How often the sampler's timer runs (docs/observability.md). */
export const EVENT_LOOP_SAMPLE_MS = 1_000;

/** The figures, seconds, with their prom-client names (the names dashboards for Node services already use). */
export const FIGURES = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const;
export type Figure = (typeof FIGURES)[number];

/** Samples kept for a scrape (the oldest dropped past it): ten minutes at one a second, for a server nobody scrapes. */
const MAX_SAMPLES = 600;

/** The value at fraction `q` of sorted `values` (nearest rank). */
const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;

/**
 * How late a repeating timer runs: each run records the time past when it was due. Not Node's
 * `monitorEventLoopDelay`, which prom-client exports: its samples are the time between two runs, the interval
 * included (with a 1 s interval every figure read about 1 s on an idle server), and after each reset (one per
 * scrape) the first interval is not recorded, so a stall just after a scrape went unseen. Kept per scrape window.
 */
export class EventLoopDelay {
  private samplesMs: number[] = [];
  private due: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly intervalMs: number) {
    this.due = performance.now() + intervalMs;
    this.timer = setInterval(() => this.tick(), intervalMs);
    // Never what keeps the process running.
    this.timer.unref();
  }

  /** Timer runs recorded since the last `take`. */
  get samples(): number {
    return this.samplesMs.length;
  }

  private tick(): void {
    const now = performance.now();
    if (this.samplesMs.length >= MAX_SAMPLES) this.samplesMs.shift();
    this.samplesMs.push(Math.max(0, now - this.due));
    // Node schedules the next run from this one's start, as `due` does.
    this.due = now + this.intervalMs;
  }

  /** The figures since the last take, seconds (all 0 when no timer ran in the window); then starts a new window. */
  take(): Record<Figure, number> {
    const sorted = this.samplesMs.sort((a, b) => a - b);
    this.samplesMs = [];
    const n = sorted.length;
    const mean = n === 0 ? 0 : sorted.reduce((sum, x) => sum + x, 0) / n;
    const variance = n === 0 ? 0 : sorted.reduce((sum, x) => sum + (x - mean) ** 2, 0) / n;
    const s = (ms: number): number => ms / 1000;
    return {
      min: s(sorted[0] ?? 0),
      max: s(sorted[n - 1] ?? 0),
      mean: s(mean),
      stddev: s(Math.sqrt(variance)),
      p50: s(quantile(sorted, 0.5)),
      p90: s(quantile(sorted, 0.9)),
      p99: s(quantile(sorted, 0.99)),
    };
  }

  /** Stops the timer (the server's stop). */
  stop(): void {
    clearInterval(this.timer);
  }
}
