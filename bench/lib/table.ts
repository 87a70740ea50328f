// Owns the summary table: one row per (benchmark, metric), Plait's figure, each peer's figure and Plait ÷ peer, as text or Markdown.
import type { ServerKind } from './launch.js';
import { verdict, type Figure } from './report.js';
import { round } from './stats.js';

const REFERENCE_LABEL: Partial<Record<ServerKind, string>> = {
  'uws-hello': 'uWS hello',
  'plait-nopersist': 'Plait no-log',
  'floor-checked-logged': 'floor+check+log',
  'y-websocket-leveldb': 'y-ws+leveldb',
};

export function formatValue(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${round(value / 1e6, 3)}M`;
  if (abs >= 1e4) return `${round(value / 1e3, 3)}k`;
  return String(round(value, 3));
}

function ratio(plait: number | undefined, other: number | undefined): string {
  // ratios of deltas that came out at or below zero (noise, nothing retained) mean nothing
  if (plait === undefined || other === undefined || !(plait > 0) || !(other > 0)) return '–';
  return `×${round(plait / other, 2)}`;
}

export interface Row {
  readonly cells: string[];
}

export const HEADER = ['benchmark', 'metric', 'unit', 'Plait', 'Hocuspocus', 'P/H', 'y-websocket', 'P/Y', 'floor', 'P/F', 'reference', 'P/ref', 'target'];

/** Rows in the order figures first appear. */
export function rows(figures: readonly Figure[]): Row[] {
  const keys: Array<[string, string]> = [];
  for (const f of figures) if (!keys.some(([b, m]) => b === f.bench && m === f.metric)) keys.push([f.bench, f.metric]);
  return keys.map(([bench, metric]) => {
    const of = (server: ServerKind): Figure | undefined => figures.find((f) => f.bench === bench && f.metric === metric && f.server === server);
    const plait = of('plait')?.value;
    const hocuspocus = of('hocuspocus')?.value;
    const yws = of('y-websocket')?.value;
    // bench/servers/floor.ts: the least a correct Yjs server on the same stack does; for REST rows,
    // bench/servers/rest-floor.ts: the least a committed comment write does.
    const floor = (of('floor') ?? of('rest-floor'))?.value;
    // The first of these a run has: the reference that explains the row (bench/README.md).
    const ref = (['uws-hello', 'floor-checked-logged', 'plait-nopersist', 'y-websocket-leveldb'] as const).map((kind) => ({ kind, figure: of(kind) })).find((r) => r.figure !== undefined);
    const unit = figures.find((f) => f.bench === bench && f.metric === metric)?.unit ?? '';
    const judged = verdict(figures, bench, metric);
    const target = judged === undefined ? '' : `${judged.target.text}: ${judged.met ? 'MET' : 'MISSED'} (${judged.detail})`;
    const show = (value: number | undefined): string => (value === undefined ? '–' : formatValue(value));
    return {
      cells: [
        bench,
        metric,
        unit,
        show(plait),
        show(hocuspocus),
        ratio(plait, hocuspocus),
        show(yws),
        ratio(plait, yws),
        show(floor),
        ratio(plait, floor),
        ref === undefined || ref.figure === undefined ? '–' : `${REFERENCE_LABEL[ref.kind] ?? ref.kind} ${formatValue(ref.figure.value)}`,
        ratio(plait, ref?.figure?.value),
        target,
      ],
    };
  });
}

export function textTable(figures: readonly Figure[]): string {
  const body = rows(figures).map((r) => r.cells);
  const all = [HEADER, ...body];
  const widths = HEADER.map((_, i) => Math.max(...all.map((cells) => (cells[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells.map((cell, i) => (i >= 3 && i <= 9 ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(HEADER), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

export function markdownTable(figures: readonly Figure[]): string {
  const escape = (cell: string): string => cell.replaceAll('|', '\\|');
  const line = (cells: readonly string[]): string => `| ${cells.map(escape).join(' | ')} |`;
  const align = HEADER.map((_, i) => (i >= 3 && i <= 11 ? '---:' : '---'));
  return [line(HEADER), line(align), ...rows(figures).map((r) => line(r.cells))].join('\n');
}
