// Owns reading the server's own figures: a Prometheus text exposition scraped from `/metrics` before and after a run, and what changed.
import { networkReason } from './rest-client.js';

export interface ServerMetrics {
  /** Whether the server exposed `/metrics` (a 404 or a refused connection is not an error of the run). */
  readonly available: boolean;
  readonly url: string;
  /** HTTP status or the network error when not available. */
  readonly note?: string;
  /** Samples after the run (`name{labels}` to value). */
  readonly after?: Record<string, number>;
  /** Counters (`_total`, `_count`, `_sum`) as the difference after − before: what the run caused. */
  readonly delta?: Record<string, number>;
}

/** Parses the sample lines of the text format (comments and malformed lines are skipped). */
export function parsePrometheus(text: string): Record<string, number> {
  const samples: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    // name{labels} value [timestamp]; label values may hold spaces, so split after the closing brace
    const close = trimmed.lastIndexOf('}');
    const head = close >= 0 ? trimmed.slice(0, close + 1) : trimmed.split(/\s+/)[0] ?? '';
    const rest = trimmed.slice(head.length).trim().split(/\s+/);
    const value = Number(rest[0]);
    if (head !== '' && rest[0] !== undefined && rest[0] !== '' && !Number.isNaN(value)) samples[head] = value;
  }
  return samples;
}

export async function scrape(url: string): Promise<{ samples?: Record<string, number>; note?: string }> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const body = await response.text();
    if (!response.ok) return { note: `HTTP ${response.status}` };
    const samples = parsePrometheus(body);
    // some servers answer every path (Hocuspocus greets): no sample, no metrics
    if (Object.keys(samples).length === 0) return { note: `HTTP ${response.status} without Prometheus samples` };
    return { samples };
  } catch (error) {
    return { note: networkReason(error) };
  }
}

const isCounter = (name: string): boolean => /(_total|_count|_sum)(\{|$)/.test(name);

export function serverMetrics(url: string, before: Record<string, number> | undefined, after: { samples?: Record<string, number>; note?: string }): ServerMetrics {
  if (after.samples === undefined) return { available: false, url, note: after.note ?? 'no answer' };
  const delta: Record<string, number> = {};
  for (const [name, value] of Object.entries(after.samples)) {
    if (isCounter(name)) delta[name] = value - (before?.[name] ?? 0);
  }
  return { available: true, url, after: after.samples, delta };
}
