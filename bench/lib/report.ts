// Owns the figures the benches produce: their shape, the JSON lines on stdout, and the targets.
import { pathToFileURL } from 'node:url';
import type { ServerKind } from './launch.js';
import { round } from './stats.js';

export interface Figure {
  /** Benchmark row group, e.g. "fan-out 1×500". */
  readonly bench: string;
  readonly metric: string;
  readonly unit: string;
  readonly server: ServerKind;
  readonly value: number;
  readonly better: 'lower' | 'higher';
  /** Extra context kept in the JSON (not in the table). */
  readonly detail?: Readonly<Record<string, unknown>>;
}

export interface Target {
  readonly bench: string;
  readonly metric: string;
  /** The condition on plait ÷ peer, for every listed peer. */
  readonly maxRatio?: number;
  readonly minRatio?: number;
  /** A bound of its own for some peers (e.g. ≤ 1.1× the floor and below the peers), instead of maxRatio. */
  readonly peerMax?: Partial<Record<ServerKind, number>>;
  readonly peers: readonly ServerKind[];
  readonly text: string;
}

/** The targets of issue 6, as ratios measured in one run. */
export const TARGETS: readonly Target[] = [
  { bench: 'fan-out 1×50', metric: 'server CPU / delivery', maxRatio: 1 / 3, peers: ['hocuspocus', 'y-websocket'], text: '≤ 1/3 of both' },
  { bench: 'fan-out 1×500', metric: 'server CPU / delivery', maxRatio: 1 / 3, peers: ['hocuspocus', 'y-websocket'], text: '≤ 1/3 of both' },
  { bench: 'fan-out 1×500', metric: 'latency p99', maxRatio: 0.999_999, peers: ['hocuspocus', 'y-websocket'], text: 'below both' },
  { bench: 'memory, small docs', metric: 'memory / loaded doc', maxRatio: 1, peers: ['hocuspocus', 'y-websocket'], text: 'no worse than either' },
  { bench: 'memory, small docs', metric: 'retained after eviction', maxRatio: 1, peers: ['hocuspocus', 'y-websocket'], text: 'no worse than either' },
  ...['late join, 1 MB doc', 'late join, 1 MB doc, 4 edits before each'].flatMap((bench) =>
    ['server CPU / join', 'time to full state p50'].map((metric) => ({
      bench,
      metric,
      maxRatio: 0.999_999,
      peerMax: { floor: 1.1 },
      peers: ['floor', 'hocuspocus', 'y-websocket'] as const,
      text: '≤ 1.1× floor, below both peers',
    })),
  ),
  { bench: 'REST Update Presence', metric: 'requests/s', minRatio: 0.5, peers: ['uws-hello'], text: '≥ 1/2 of uWS hello' },
  // Issue 18. Throughput here is bound by the commit latency of the disk as much as by CPU; see bench/README.md.
  { bench: 'REST Add Comment Annotations', metric: 'requests/s', minRatio: 0.25, peers: ['uws-hello'], text: '≥ 1/4 of uWS hello' },
  // Issue 18, memory: anonymous memory no more than Hocuspocus's, RSS at most 1.1× (perf-mem, bench/README.md).
  ...['memory, idle', 'fan-out 1×50'].flatMap((bench) => [
    { bench, metric: bench === 'memory, idle' ? 'anon RSS' : 'server anon RSS after the burst', maxRatio: 1, peers: ['hocuspocus'] as const, text: 'anon ≤ Hocuspocus' },
    { bench, metric: bench === 'memory, idle' ? 'RSS' : 'server RSS after the burst', maxRatio: 1.1, peers: ['hocuspocus'] as const, text: '≤ 1.1× Hocuspocus' },
  ]),
];

export type Verdict = { readonly target: Target; readonly met: boolean; readonly detail: string } | undefined;

/** Plait ÷ each listed peer, judged against the row's target (undefined when the row has none or a figure is missing). */
export function verdict(figures: readonly Figure[], bench: string, metric: string): Verdict {
  const target = TARGETS.find((t) => t.bench === bench && t.metric === metric);
  if (target === undefined) return undefined;
  const value = (server: ServerKind): number | undefined => figures.find((f) => f.bench === bench && f.metric === metric && f.server === server)?.value;
  const plait = value('plait');
  if (plait === undefined) return { target, met: false, detail: 'no Plait figure' };
  const parts: string[] = [];
  let met = true;
  for (const peer of target.peers) {
    const other = value(peer);
    if (other === undefined) {
      parts.push(`${peer}: missing`);
      met = false;
      continue;
    }
    if (other <= 0) {
      // A reference at or below zero (a difference of two readings that came out as noise: nothing retained) makes
      // the ratio meaningless, and a negative one would pass any "at most" target. The values are compared instead.
      const ok = target.minRatio === undefined ? plait <= other : plait >= other;
      met &&= ok;
      parts.push(`${peer} ${round(other, 3)} (≤ 0: values compared)`);
      continue;
    }
    const ratio = plait / other;
    const max = target.peerMax?.[peer] ?? target.maxRatio;
    const ok = (max === undefined || ratio <= max) && (target.minRatio === undefined || ratio >= target.minRatio);
    met &&= ok;
    parts.push(`${peer} ×${round(ratio, 3)}`);
  }
  return { target, met, detail: parts.join(', ') };
}

/**
 * Several rounds of the same figures → one figure per (bench, metric, server): the median (counts of failures:
 * the worst round, so one bad round is not hidden), every round kept in detail.
 */
export function medianOfRounds(rounds: ReadonlyArray<readonly Figure[]>): Figure[] {
  const first = rounds[0] ?? [];
  if (rounds.length <= 1) return [...first];
  return first.map((figure) => {
    const values = rounds.map((round) => round.find((f) => f.bench === figure.bench && f.metric === figure.metric && f.server === figure.server)?.value ?? Number.NaN);
    const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
    const mid = sorted.length / 2;
    const worst = figure.unit === 'count' ? sorted[sorted.length - 1] : undefined;
    const value = worst !== undefined ? worst : sorted.length === 0 ? Number.NaN : sorted.length % 2 === 1 ? (sorted[Math.floor(mid)] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
    return { ...figure, value, detail: { ...figure.detail, rounds: values.map((v) => round(v, 4)) } };
  });
}

/** Prints one figure as a JSON line on stdout (run-all collects these from each script). */
export function emit(figure: Figure): void {
  process.stdout.write(`${JSON.stringify({ figure: { ...figure, value: round(figure.value, 4) } })}\n`);
}

/** Parses the JSON figure lines out of a script's stdout. */
export function parseFigures(stdout: string): Figure[] {
  const figures: Figure[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{"figure"')) continue;
    figures.push((JSON.parse(line) as { figure: Figure }).figure);
  }
  return figures;
}

export function progress(line: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
}

/** True when the module at `url` is the script node was started with (not imported by run-all). */
export function isMain(url: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && pathToFileURL(entry).href === url;
}

export const MB = 1024 * 1024;
