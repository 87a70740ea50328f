// Owns reading `perf script` output of a server process into CPU buckets (sends, JS by entry point, LMDB, GC, JIT threads), side by side.
import { readFileSync } from 'node:fs';
import { isMain } from './lib/report.js';

const USAGE = `node --import=tsx bench/perf-summary.ts A.script [B.script …]
  Each file is the output of \`perf script -i perf.data\` for one server process, recorded with
  \`perf record -e cpu-clock -F 2000 -g -p <pid>\` while the server ran with
  BENCH_HOST_NODE_FLAGS="--perf-basic-prof --interpreted-frames-native-stack" (so JavaScript frames have names).
  Prints samples per bucket, one column per file (bench/README.md, "Where a phase's CPU goes, by perf").`;

interface Sample {
  readonly tid: string;
  /** Leaf first, as perf prints them: symbol names only. */
  readonly frames: readonly string[];
}

/** Parses `perf script` text: a header line per sample, then one indented `addr symbol (dso)` line per frame. */
export function parseScript(text: string): Sample[] {
  const samples: Sample[] = [];
  let tid: string | undefined;
  let frames: string[] = [];
  const end = (): void => {
    if (tid !== undefined) samples.push({ tid, frames });
    tid = undefined;
    frames = [];
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') end();
    else if (!/^\s/.test(line)) {
      end();
      tid = line.trim().split(/\s+/)[1] ?? '?';
    } else {
      const frame = /^\s*[0-9a-f]+ (.*) \(.*\)$/.exec(line);
      if (frame?.[1] !== undefined) frames.push(frame[1]);
    }
  }
  end();
  return samples;
}

const GC = /Heap::|Scavenge|MarkCompact|GCTracer|Sweeper|ConcurrentMarking/;
const ENTRY_POINTS = ['message', 'processImmediate', 'processTimers', 'processTicksAndRejections'] as const;

/**
 * One bucket per sample. The main thread is the one with the most samples. Off the main thread: JIT (TurboFan's
 * compile tasks), GC helpers, LMDB's writer, other. On it, in this order: GC, socket sends (kernel included), the
 * event loop's poll, receives, LMDB's native code, JavaScript by its outermost frame (uWS's callbacks such as
 * `message`, Node's immediate and timer queues), uWS's native code, the rest.
 */
export function bucketOf(sample: Sample, mainTid: string): string {
  const joined = sample.frames.join(' | ');
  if (sample.tid !== mainTid) {
    if (joined.includes('OptimizingCompileDispatcher') || joined.includes('Compile')) return 'thread: JIT compile';
    if (GC.test(joined)) return 'thread: GC';
    if (joined.includes('mdb_')) return 'thread: LMDB writer';
    return 'thread: other';
  }
  if (GC.test(joined)) return 'main: GC';
  if (joined.includes('__send') || joined.includes('sendto')) return 'main: socket send';
  if (joined.includes('epoll_pwait')) return 'main: epoll';
  if (joined.includes('__libc_recv') || joined.includes('recvfrom')) return 'main: socket receive';
  if (joined.includes('mdb_')) return 'main: LMDB native';
  const js = sample.frames.filter((frame) => frame.startsWith('JS:'));
  const outer = js[js.length - 1];
  if (outer !== undefined) {
    const entry = ENTRY_POINTS.find((name) => outer.includes(name));
    if (entry !== undefined) return `main: JS ${entry}`;
    if (outer.includes('node_modules/lmdb/')) return 'main: JS lmdb-js';
    return 'main: JS other';
  }
  if (/uWS|uws_|us_/.test(joined)) return 'main: uWS native';
  return 'main: other native';
}

export function summarize(samples: readonly Sample[]): Map<string, number> {
  const perThread = new Map<string, number>();
  for (const { tid } of samples) perThread.set(tid, (perThread.get(tid) ?? 0) + 1);
  const mainTid = [...perThread].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
  const buckets = new Map<string, number>();
  for (const sample of samples) {
    const bucket = bucketOf(sample, mainTid);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
  }
  return buckets;
}

if (isMain(import.meta.url)) {
  const files = process.argv.slice(2);
  if (files.length === 0 || files.includes('--help')) {
    console.log(USAGE);
    process.exit(files.length === 0 ? 1 : 0);
  }
  const columns = files.map((file) => summarize(parseScript(readFileSync(file, 'utf8'))));
  const names = [...new Set(columns.flatMap((column) => [...column.keys()]))].sort(
    (a, b) => columns.reduce((sum, c) => sum + (c.get(b) ?? 0), 0) - columns.reduce((sum, c) => sum + (c.get(a) ?? 0), 0),
  );
  const width = Math.max(...files.map((file) => file.length), 8);
  console.log(['bucket'.padEnd(24), ...files.map((file) => file.padStart(width))].join(' '));
  for (const name of names) console.log([name.padEnd(24), ...columns.map((column) => String(column.get(name) ?? 0).padStart(width))].join(' '));
  console.log(['total'.padEnd(24), ...columns.map((column) => String([...column.values()].reduce((a, b) => a + b, 0)).padStart(width))].join(' '));
}
