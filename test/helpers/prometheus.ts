// Test helper: a strict reader of the Prometheus text exposition format (0.0.4), failing on any line it cannot read.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Readonly<Record<string, readonly string[]>> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
  counter: ['', '_total'],
};

function parseValue(raw: string, line: string): number {
  if (raw === '+Inf') return Infinity;
  if (raw === '-Inf') return -Infinity;
  // prom-client writes an empty histogram's mean (the event-loop lag right after a scrape reset it) as `Nan`;
  // Prometheus reads values with Go's ParseFloat, which takes NaN in any case.
  if (raw.toLowerCase() === 'nan') return NaN;
  const value = Number(raw);
  if (Number.isNaN(value)) throw new Error(`not a number in: ${line}`);
  return value;
}

function parseLabels(raw: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < raw.length) {
    const match = LABEL.exec(raw);
    if (match === null) throw new Error(`bad labels in: ${line}`);
    labels[match[1] as string] = (match[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** Reads `text`; throws naming the first line that is not valid exposition format or whose family has no TYPE. */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const [, keyword, name, rest] = /^#\s+(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line) ?? [];
      if (keyword === undefined) continue; // a plain comment
      if (!NAME.test(name ?? '')) throw new Error(`bad metric name in: ${line}`);
      if (keyword === 'TYPE') {
        if (!TYPES.has(rest ?? '')) throw new Error(`bad type in: ${line}`);
        types.set(name as string, rest as string);
      }
      continue;
    }
    const match = SAMPLE.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const name = match[1] as string;
    const family = [...types.keys()].find((base) => (SUFFIXES[types.get(base) as string] ?? ['']).some((suffix) => name === base + suffix));
    if (family === undefined) throw new Error(`sample of an undeclared family: ${line}`);
    samples.push({ name, labels: parseLabels(match[3] ?? '', line), value: parseValue(match[4] as string, line) });
  }
  return { types, samples };
}

/** The value of the first sample named `name` whose labels include `labels` (0 when there is none). */
export function sampleValue(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const sample = exposition.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return sample?.value ?? 0;
}
