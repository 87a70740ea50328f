// Owns the run report: its JSON shape, building it from the workers' intervals, the text summary, and merging reports of several generator machines.
import { addCounters, mergeEncoded, type Counters, type EncodedHistogram } from './histograms.js';
import type { ClientResult, IntervalFigures } from './plan.js';
import type { ServerMetrics } from './prometheus.js';
import type { Scenario } from './scenario.js';

export const REPORT_FORMAT = 'plait-load/1';

export interface Phase {
  readonly seconds: number;
  readonly counters: Counters;
  readonly histograms: Record<string, EncodedHistogram>;
}

export interface SeriesPoint {
  /** End of the interval, seconds from the start. */
  readonly t: number;
  /** Seconds the counters cover (the interval, or more after a starved thread skipped); rates divide by it. */
  readonly seconds: number;
  readonly counters: Counters;
  readonly gauges: Record<string, number>;
  /** Highest event-loop utilization of any generator thread in the interval (0..1). */
  readonly elu: number;
  readonly histograms: Record<string, EncodedHistogram>;
}

export interface Delivery {
  /** Edits sent, over all documents. */
  readonly sent: number;
  /** Clients that stayed to the end (churning ones leave and are not counted). */
  readonly clients: number;
  /** Of those, clients whose copy held every edit sent to their document. */
  readonly complete: number;
  /** Edits missing, summed over the incomplete clients. */
  readonly missing: number;
  readonly perDocument: ReadonlyArray<{ readonly doc: number; readonly sent: number; readonly clients: number; readonly minReceived: number }>;
}

export interface Machine {
  readonly host: string;
  readonly runId: string;
  readonly workers: number;
  readonly startedAt: string;
}

export interface LoadReport {
  readonly format: typeof REPORT_FORMAT;
  readonly scenario: Scenario;
  readonly target: { readonly kind: string; readonly url: string };
  readonly machines: readonly Machine[];
  readonly intervalSeconds: number;
  readonly phases: { readonly all: Phase; readonly steady: Phase };
  readonly series: readonly SeriesPoint[];
  readonly delivery: Delivery;
  readonly errors: readonly string[];
  readonly warnings: readonly string[];
  readonly server: ServerMetrics;
}

/** Folds the workers' intervals (several per index) into series points and the two phases. */
export function buildPhases(
  intervals: readonly IntervalFigures[],
  intervalMs: number,
  rampUpSeconds: number,
  durationSec: number,
): { series: SeriesPoint[]; all: Phase; steady: Phase } {
  const byIndex = new Map<number, IntervalFigures[]>();
  for (const figures of intervals) byIndex.set(figures.index, [...(byIndex.get(figures.index) ?? []), figures]);
  const series: SeriesPoint[] = [...byIndex.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, parts]) => {
      const names = new Set(parts.flatMap((part) => Object.keys(part.histograms)));
      const histograms: Record<string, EncodedHistogram> = {};
      for (const name of names) histograms[name] = mergeEncoded(parts.map((part) => part.histograms[name]));
      const counters: Counters = {};
      const gauges: Counters = {};
      for (const part of parts) {
        addCounters(counters, part.counters);
        addCounters(gauges, part.gauges);
      }
      const seconds = Math.max(intervalMs / 1000, ...parts.map((part) => part.seconds));
      return { t: ((index + 1) * intervalMs) / 1000, seconds, counters, gauges, elu: Math.max(0, ...parts.map((part) => part.elu)), histograms };
    });
  const phase = (points: readonly SeriesPoint[], seconds: number): Phase => {
    const names = new Set(points.flatMap((point) => Object.keys(point.histograms)));
    const histograms: Record<string, EncodedHistogram> = {};
    for (const name of [...names].sort()) histograms[name] = mergeEncoded(points.map((point) => point.histograms[name]));
    const counters: Counters = {};
    for (const point of points) addCounters(counters, point.counters);
    return { seconds, counters, histograms };
  };
  const steadyPoints = series.filter((point) => point.t - intervalMs / 1000 >= rampUpSeconds - 1e-9 && point.t <= durationSec + 1e-9);
  return { series, all: phase(series, durationSec), steady: phase(steadyPoints, durationSec - rampUpSeconds) };
}

/** Compares every remaining client's copy with what was sent to its document. */
export function buildDelivery(sentPerDoc: readonly number[], results: readonly ClientResult[]): Delivery {
  const stayed = results.filter((r) => r.role !== 'churn');
  const perDocument = sentPerDoc.map((sent, doc) => {
    const mine = stayed.filter((r) => r.doc === doc);
    return { doc, sent, clients: mine.length, minReceived: mine.length === 0 ? 0 : Math.min(...mine.map((r) => r.received)) };
  });
  const sent = sentPerDoc.reduce((a, b) => a + b, 0);
  let complete = 0;
  let missing = 0;
  for (const r of stayed) {
    const expected = sentPerDoc[r.doc] ?? 0;
    if (r.received >= expected) complete++;
    else missing += expected - r.received;
  }
  return { sent, clients: stayed.length, complete, missing, perDocument };
}

const fmt = (ms: number): string => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 1)} ms`);
const pad = (s: string, n: number): string => s.padEnd(n);

export const HISTOGRAM_LABELS: Readonly<Record<string, string>> = {
  'sync.e2e': 'edit, sender to every receiver',
  'presence.e2e': 'presence, sender to every receiver',
  'sync.join': 'connect to first sync',
  'generator.lag': 'generator lag (fired − intended)',
};

export const labelOf = (name: string): string => HISTOGRAM_LABELS[name] ?? (name.startsWith('rest.') ? `REST ${name.slice(5)}` : name);

/** The summary printed at the end of a run (and of a merge). */
export function textSummary(report: LoadReport): string {
  const { steady, all } = report.phases;
  const lines: string[] = [];
  const machines = report.machines.length > 1 ? ` on ${report.machines.length} machines` : '';
  lines.push(`plait-load: ${report.scenario.name} against ${report.target.kind} ${report.target.url}${machines}`);
  lines.push(`${all.seconds} s (ramp-up ${report.scenario.rampUpSeconds} s, steady ${steady.seconds} s); figures of the steady phase unless noted`);
  lines.push('');
  lines.push(`${pad('latency (ms)', 40)}${['count', 'p50', 'p90', 'p99', 'p99.9', 'max'].map((h) => h.padStart(10)).join('')}`);
  const rows = Object.keys(all.histograms).sort((a, b) => (a.startsWith('rest.') ? 1 : 0) - (b.startsWith('rest.') ? 1 : 0) || a.localeCompare(b));
  for (const name of rows) {
    const h = steady.histograms[name] ?? all.histograms[name];
    if (h === undefined) continue;
    const cells = [String(h.count), fmt(h.p50), fmt(h.p90), fmt(h.p99), fmt(h.p999), fmt(h.max)];
    lines.push(`${pad(labelOf(name) + (steady.histograms[name] === undefined ? ' (all)' : ''), 40)}${cells.map((c) => c.padStart(10)).join('')}`);
  }
  const c = all.counters;
  const rate = (n: number | undefined): string => (steady.seconds > 0 ? `${((n ?? 0) / steady.seconds).toFixed(1)}/s` : 'n/a');
  lines.push('');
  lines.push(`edits sent ${c['edits.sent'] ?? 0} (steady ${rate(steady.counters['edits.sent'])}), received live ${c['edits.received'] ?? 0} (steady ${rate(steady.counters['edits.received'])}), caught up ${c['edits.caughtUp'] ?? 0}`);
  const d = report.delivery;
  lines.push(`delivery: ${d.complete}/${d.clients} clients hold every edit of their document${d.missing > 0 ? `, ${d.missing} edits missing` : ''}`);
  const restSent = sumMatching(c, /^rest\..*\.sent$/);
  const restErr = sumMatching(c, /^rest\..*\.error$/) + sumMatching(c, /^rest\..*\.dropped$/);
  if (restSent > 0) lines.push(`REST: ${restSent} requests (steady ${rate(sumMatching(steady.counters, /^rest\..*\.sent$/))}), ${restErr} failed`);
  for (const row of restRows(c)) {
    if (row.failed + row.dropped > 0) lines.push(`  ${row.op}: ${row.sent} sent, ${row.ok} ok, ${row.failed} failed, ${row.dropped} dropped`);
  }
  lines.push(`connections: ${c['sync.connects'] ?? 0} opened, ${c['sync.disconnects'] ?? 0} dropped, ${c['sync.reconnects'] ?? 0} reconnects; presence ${c['presence.sent'] ?? 0} sent, ${c['presence.received'] ?? 0} received`);
  lines.push(`errors: ${c['errors'] ?? 0}`);
  for (const error of report.errors.slice(0, 10)) lines.push(`  ${error}`);
  for (const warning of report.warnings) lines.push(`warning: ${warning}`);
  const server = report.server;
  lines.push(server.available ? `server /metrics: ${Object.keys(server.after ?? {}).length} samples scraped (in the JSON and HTML reports)` : `server /metrics: not exposed (${server.note ?? 'no answer'})`);
  return lines.join('\n');
}

/** Per REST operation: requests sent, answered ok, failed, dropped (in-flight cap). */
export function restRows(counters: Counters): Array<{ op: string; sent: number; ok: number; failed: number; dropped: number }> {
  const ops = [...new Set(Object.keys(counters).filter((k) => /^rest\..*\.sent$/.test(k)).map((k) => k.slice(5, -5)))].sort();
  return ops.map((op) => ({
    op,
    sent: counters[`rest.${op}.sent`] ?? 0,
    ok: counters[`rest.${op}.ok`] ?? 0,
    failed: counters[`rest.${op}.error`] ?? 0,
    dropped: counters[`rest.${op}.dropped`] ?? 0,
  }));
}

export function sumMatching(counters: Counters, pattern: RegExp): number {
  let sum = 0;
  for (const [name, value] of Object.entries(counters)) if (pattern.test(name)) sum += value;
  return sum;
}

function mergePhase(phases: readonly Phase[]): Phase {
  const names = new Set(phases.flatMap((p) => Object.keys(p.histograms)));
  const histograms: Record<string, EncodedHistogram> = {};
  for (const name of [...names].sort()) histograms[name] = mergeEncoded(phases.map((p) => p.histograms[name]));
  const counters: Counters = {};
  for (const p of phases) addCounters(counters, p.counters);
  return { seconds: Math.max(...phases.map((p) => p.seconds)), counters, histograms };
}

/**
 * Merges the reports of generator machines that ran one scenario at the same time: histograms are added (exact
 * percentiles of the whole), counters summed, series aligned by their time from each machine's start.
 */
export function mergeReports(reports: readonly LoadReport[]): LoadReport {
  const first = reports[0];
  if (first === undefined) throw new Error('nothing to merge: give at least one report');
  for (const report of reports) {
    if (report.format !== REPORT_FORMAT) throw new Error(`not a ${REPORT_FORMAT} report (format ${String(report.format)})`);
  }
  const times = [...new Set(reports.flatMap((r) => r.series.map((p) => p.t)))].sort((a, b) => a - b);
  const series = times.map((t) => {
    const points = reports.flatMap((r) => r.series.filter((p) => p.t === t));
    const names = new Set(points.flatMap((p) => Object.keys(p.histograms)));
    const histograms: Record<string, EncodedHistogram> = {};
    for (const name of names) histograms[name] = mergeEncoded(points.map((p) => p.histograms[name]));
    const counters: Counters = {};
    const gauges: Counters = {};
    for (const p of points) {
      addCounters(counters, p.counters);
      addCounters(gauges, p.gauges);
    }
    return { t, seconds: Math.max(...points.map((p) => p.seconds)), counters, gauges, elu: Math.max(0, ...points.map((p) => p.elu)), histograms };
  });
  const deliveries = reports.map((r) => r.delivery);
  return {
    ...first,
    machines: reports.flatMap((r) => r.machines),
    phases: { all: mergePhase(reports.map((r) => r.phases.all)), steady: mergePhase(reports.map((r) => r.phases.steady)) },
    series,
    delivery: {
      sent: deliveries.reduce((a, d) => a + d.sent, 0),
      clients: deliveries.reduce((a, d) => a + d.clients, 0),
      complete: deliveries.reduce((a, d) => a + d.complete, 0),
      missing: deliveries.reduce((a, d) => a + d.missing, 0),
      perDocument: deliveries.flatMap((d) => d.perDocument),
    },
    errors: reports.flatMap((r) => r.errors),
    warnings: reports.flatMap((r) => r.warnings.map((w) => (reports.length > 1 ? `${r.machines[0]?.host ?? '?'}: ${w}` : w))),
    server: reports.find((r) => r.server.available)?.server ?? first.server,
  };
}
