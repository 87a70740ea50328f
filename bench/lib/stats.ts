// Owns the number crunching of the benches: bounded sample buffers, percentiles and summaries.

/** A growable buffer of numbers with a hard cap (extra samples are counted but not stored). */
export class Samples {
  private data: Float64Array;
  private length = 0;
  dropped = 0;

  constructor(
    readonly cap = 2_000_000,
    initial = 1024,
  ) {
    this.data = new Float64Array(Math.min(initial, cap));
  }

  push(value: number): void {
    if (this.length === this.data.length) {
      if (this.length >= this.cap) {
        this.dropped++;
        return;
      }
      const next = new Float64Array(Math.min(this.cap, this.data.length * 2));
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = value;
  }

  get count(): number {
    return this.length;
  }

  /** A sorted copy of the stored samples. */
  sorted(): Float64Array {
    return this.data.slice(0, this.length).sort();
  }
}

export interface Summary {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Nearest-rank percentile (p in 0..100) of an ascending array; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  const index = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[index] ?? Number.NaN;
}

export function summarize(samples: Samples | readonly number[]): Summary {
  const sorted = samples instanceof Samples ? samples.sorted() : Float64Array.from(samples).sort();
  let total = 0;
  for (const value of sorted) total += value;
  return {
    count: sorted.length,
    mean: sorted.length === 0 ? Number.NaN : total / sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] ?? Number.NaN),
  };
}

export function median(values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort(), 50);
}

/** Rounds to a sensible number of significant digits for tables and JSON. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const factor = 10 ** Math.max(0, digits - 1 - magnitude);
  return Math.round(value * factor) / factor;
}
