// Owns the self-contained HTML report: inline SVG charts over time and the summary tables, no script and nothing fetched.
import { labelOf, restRows, sumMatching, textSummary, type LoadReport, type SeriesPoint } from './report.js';

interface Line {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4d7c0f', '#be185d'];

const LEGEND_COLUMNS = 3;

const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** 1, 2 or 5 times a power of ten, at least `value` (axis tops). */
function niceMax(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const tick = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : String(Number(v.toPrecision(3))));

/** A line chart as an SVG element; every line is a `path.series` (the report test counts them). */
export function lineChart(title: string, unit: string, lines: readonly Line[], duration: number): string {
  const width = 640;
  const height = 240 + Math.max(0, Math.ceil(lines.length / LEGEND_COLUMNS) - 1) * 14;
  const left = 56;
  const right = 12;
  const top = 28;
  const bottom = 40 + Math.max(0, Math.ceil(lines.length / LEGEND_COLUMNS) - 1) * 14;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const drawn = lines.filter((line) => line.points.length > 0);
  const yMax = niceMax(Math.max(0, ...drawn.flatMap((line) => line.points.map(([, v]) => v))));
  const xMax = Math.max(duration, ...drawn.flatMap((line) => line.points.map(([t]) => t)), 1);
  const x = (t: number): number => left + (t / xMax) * plotW;
  const y = (v: number): number => top + plotH - (v / yMax) * plotH;
  const parts: string[] = [];
  parts.push(`<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escape(title)}">`);
  parts.push(`<text x="${left}" y="18" class="title">${escape(title)} (${escape(unit)})</text>`);
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" class="axis" text-anchor="end">${tick(v)}</text>`);
  }
  const xStep = niceMax(xMax / 6);
  for (let t = 0; t <= xMax + 1e-9; t += xStep) {
    parts.push(`<text x="${x(t).toFixed(1)}" y="${height - bottom + 16}" class="axis" text-anchor="middle">${tick(t)} s</text>`);
  }
  if (drawn.length === 0) parts.push(`<text x="${left + plotW / 2}" y="${top + plotH / 2}" class="axis" text-anchor="middle">no data</text>`);
  drawn.forEach((line, i) => {
    const color = COLORS[i % COLORS.length] ?? '#000';
    const d = line.points.map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    parts.push(`<path class="series" d="${d}" stroke="${color}" fill="none" stroke-width="1.8"><title>${escape(line.name)}</title></path>`);
    if (line.points.length === 1) {
      const [t, v] = line.points[0] ?? [0, 0];
      parts.push(`<circle cx="${x(t).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2.5" fill="${color}"/>`);
    }
    const lx = left + (i % LEGEND_COLUMNS) * ((width - left) / LEGEND_COLUMNS);
    const ly = height - bottom + 32 + Math.floor(i / LEGEND_COLUMNS) * 14;
    parts.push(`<rect x="${lx}" y="${ly - 8}" width="10" height="3" fill="${color}"/><text x="${lx + 14}" y="${ly - 4}" class="legend">${escape(line.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

type Pick = (point: SeriesPoint) => number | undefined;

function line(report: LoadReport, name: string, pick: Pick): Line {
  const points: Array<[number, number]> = [];
  for (const point of report.series) {
    const v = pick(point);
    if (v !== undefined && Number.isFinite(v)) points.push([point.t, v]);
  }
  return { name, points };
}

const percentileLines = (report: LoadReport, histogram: string): Line[] =>
  (['p50', 'p99', 'p999'] as const).map((p) => line(report, p === 'p999' ? 'p99.9' : p, (pt) => pt.histograms[histogram]?.[p]));

/** Every chart of the report, in reading order. */
export function charts(report: LoadReport): string[] {
  const per = (n: number | undefined, point: SeriesPoint): number => (n ?? 0) / (point.seconds || report.intervalSeconds);
  const duration = report.phases.all.seconds;
  const restOps = [...new Set(report.series.flatMap((p) => Object.keys(p.histograms)).filter((n) => n.startsWith('rest.')))].sort();
  const out = [
    lineChart('Edit latency, sender to every receiver', 'ms', percentileLines(report, 'sync.e2e'), duration),
    lineChart('Presence latency, sender to every receiver', 'ms', percentileLines(report, 'presence.e2e'), duration),
    lineChart('REST latency p99 by operation', 'ms', restOps.map((op) => line(report, op.slice(5), (p) => p.histograms[op]?.p99)), duration),
    lineChart(
      'Throughput',
      'per second',
      [
        line(report, 'edits sent', (p) => per(p.counters['edits.sent'], p)),
        line(report, 'edits received', (p) => per(p.counters['edits.received'], p)),
        line(report, 'presence received', (p) => per(p.counters['presence.received'], p)),
        line(report, 'REST requests', (p) => per(sumMatching(p.counters, /^rest\..*\.sent$/), p)),
      ],
      duration,
    ),
    lineChart(
      'Errors and reconnects',
      'per second',
      [
        line(report, 'errors', (p) => per(p.counters['errors'], p)),
        line(report, 'disconnects', (p) => per(p.counters['sync.disconnects'], p)),
        line(report, 'reconnects', (p) => per(p.counters['sync.reconnects'], p)),
      ],
      duration,
    ),
    lineChart(
      'Connections',
      'count',
      [line(report, 'open', (p) => p.gauges['connections.open']), line(report, 'synced', (p) => p.gauges['connections.synced'])],
      duration,
    ),
    lineChart('Generator thread load (busiest thread)', '% event loop', [line(report, 'event-loop utilization', (p) => p.elu * 100)], duration),
  ];
  return out;
}

function table(head: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const th = head.map((h) => `<th>${escape(h)}</th>`).join('');
  const tr = rows.map((row) => `<tr>${row.map((cell) => `<td>${escape(cell)}</td>`).join('')}</tr>`).join('');
  return `<table><thead><tr>${th}</tr></thead><tbody>${tr}</tbody></table>`;
}

const ms = (v: number): string => v.toFixed(v < 10 ? 2 : 1);

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111;max-width:1340px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{border:1px solid #ddd;background:#fff}.title{font-size:13px;font-weight:600}.axis{font-size:10px;fill:#555}
.legend{font-size:11px}.grid{stroke:#eee}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:10px;overflow:auto}.warn{color:#b45309}`;

export function htmlReport(report: LoadReport): string {
  const { steady, all } = report.phases;
  const histogramRows = Object.keys(all.histograms)
    .sort()
    .map((name) => {
      const h = steady.histograms[name] ?? all.histograms[name];
      return h === undefined ? [name] : [labelOf(name), String(h.count), ms(h.p50), ms(h.p90), ms(h.p99), ms(h.p999), ms(h.max)];
    });
  const counterRows = Object.entries(all.counters)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => [name, String(value), String(steady.counters[name] ?? 0)]);
  const server = report.server;
  const serverRows = Object.entries(server.delta ?? {})
    .filter(([, v]) => v !== 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .slice(0, 200)
    .map(([name, v]) => [name, String(Number(v.toPrecision(6)))]);
  const d = report.delivery;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>plait-load: ${escape(report.scenario.name)}</title><style>${CSS}</style></head>
<body>
<h1>plait-load: ${escape(report.scenario.name)} against ${escape(report.target.kind)} ${escape(report.target.url)}</h1>
<p>${report.machines.map((m) => `${escape(m.host)} (${m.workers} threads, ${escape(m.startedAt)})`).join('; ')}. Ramp-up ${report.scenario.rampUpSeconds} s, steady ${steady.seconds} s.
Delivery: <b>${d.complete}/${d.clients}</b> clients hold every edit of their document${d.missing > 0 ? ` (${d.missing} edits missing)` : ''}.</p>
${report.warnings.map((w) => `<p class="warn">warning: ${escape(w)}</p>`).join('\n')}
<h2>Over time</h2>
<div class="charts">${charts(report).join('\n')}</div>
<h2>Latency, steady phase (ms)</h2>
${table(['measure', 'count', 'p50', 'p90', 'p99', 'p99.9', 'max'], histogramRows)}
<h2>REST by operation (whole run)</h2>
${table(['operation', 'sent', 'ok', 'failed', 'dropped'], restRows(all.counters).map((r) => [r.op, String(r.sent), String(r.ok), String(r.failed), String(r.dropped)]))}
<h2>Counters</h2>
${table(['counter', 'whole run', 'steady phase'], counterRows)}
<h2>Errors</h2>
${report.errors.length === 0 ? '<p>none</p>' : `<pre>${escape(report.errors.join('\n'))}</pre>`}
<h2>Server figures (/metrics)</h2>
${server.available ? table(['sample (change over the run)', 'value'], serverRows) : `<p>not exposed at ${escape(server.url)} (${escape(server.note ?? 'no answer')})</p>`}
<h2>Scenario</h2>
<pre>${escape(JSON.stringify(report.scenario, null, 2))}</pre>
<h2>Summary</h2>
<pre>${escape(textSummary(report))}</pre>
</body></html>
`;
}
