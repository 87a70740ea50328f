// Owns the load generator's measurements: HDR histograms (microseconds) and counters, their compact encoding, merging and percentiles.
import * as hdr from 'hdr-histogram-js';

/** 1 µs to 1 hour at 3 significant digits: p99.9 of a 2 ms latency is exact to 2 µs. */
const LOWEST_US = 1;
const HIGHEST_US = 3_600_000_000;

export function newHistogram(): hdr.Histogram {
  return hdr.build({ lowestDiscernibleValue: LOWEST_US, highestTrackableValue: HIGHEST_US, numberOfSignificantValueDigits: 3, bitBucketSize: 32 });
}

/** Records milliseconds (fractional) as whole microseconds, clamped into the trackable range. */
export function recordMs(histogram: hdr.Histogram, ms: number): void {
  const us = Math.round(ms * 1000);
  histogram.recordValue(Math.min(HIGHEST_US, Math.max(LOWEST_US, us)));
}

export const encode = (histogram: hdr.Histogram): string => hdr.encodeIntoCompressedBase64(histogram);

export function decode(encoded: string): hdr.Histogram {
  const decoded = hdr.decodeFromCompressedBase64(encoded, 32);
  // a decoded histogram's range is what was recorded; re-home it so any later value fits
  const histogram = newHistogram();
  histogram.add(decoded);
  decoded.destroy();
  return histogram;
}

/** Percentiles in milliseconds, as reported everywhere (text, JSON, HTML). */
export interface Percentiles {
  readonly count: number;
  readonly min: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

const ms = (us: number): number => Math.round(us) / 1000;

export function percentiles(histogram: hdr.Histogram): Percentiles {
  if (histogram.totalCount === 0) return { count: 0, min: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };
  return {
    count: histogram.totalCount,
    min: ms(histogram.minNonZeroValue),
    mean: ms(histogram.mean),
    p50: ms(histogram.getValueAtPercentile(50)),
    p90: ms(histogram.getValueAtPercentile(90)),
    p99: ms(histogram.getValueAtPercentile(99)),
    p999: ms(histogram.getValueAtPercentile(99.9)),
    max: ms(histogram.maxValue),
  };
}

/** A histogram as it travels (between threads, in the JSON report): encoded, with its percentiles for readers of the file. */
export interface EncodedHistogram extends Percentiles {
  readonly encoded: string;
}

export function toEncoded(histogram: hdr.Histogram): EncodedHistogram {
  return { ...percentiles(histogram), encoded: encode(histogram) };
}

/** Adds encoded histograms into one (the merge of workers, intervals and machines). */
export function mergeEncoded(parts: ReadonlyArray<EncodedHistogram | string | undefined>): EncodedHistogram {
  const total = newHistogram();
  for (const part of parts) {
    if (part === undefined) continue;
    const decoded = decode(typeof part === 'string' ? part : part.encoded);
    total.add(decoded);
    decoded.destroy();
  }
  const out = toEncoded(total);
  total.destroy();
  return out;
}

export type Counters = Record<string, number>;

export function addCounters(into: Counters, from: Readonly<Counters>): Counters {
  for (const [name, value] of Object.entries(from)) into[name] = (into[name] ?? 0) + value;
  return into;
}

/**
 * One thread's measurements for one interval: histograms by name and counters. `take()` hands over what was
 * recorded since the last take and starts afresh, so an interval's figures are its own.
 */
export class Recorder {
  private readonly histograms = new Map<string, hdr.Histogram>();
  private counters: Counters = {};

  record(name: string, valueMs: number): void {
    let histogram = this.histograms.get(name);
    if (histogram === undefined) {
      histogram = newHistogram();
      this.histograms.set(name, histogram);
    }
    recordMs(histogram, valueMs);
  }

  count(name: string, by = 1): void {
    this.counters[name] = (this.counters[name] ?? 0) + by;
  }

  take(): { histograms: Record<string, string>; counters: Counters } {
    const histograms: Record<string, string> = {};
    // kept and reset, not rebuilt: a histogram of this range is ~180 KB of counts
    for (const [name, histogram] of this.histograms) {
      if (histogram.totalCount === 0) continue;
      histograms[name] = encode(histogram);
      histogram.reset();
    }
    const counters = this.counters;
    this.counters = {};
    return { histograms, counters };
  }
}
