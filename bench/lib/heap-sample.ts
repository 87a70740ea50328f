// Owns the allocation instrument: V8's sampling heap profiler in a server host, counting collected objects too (churn).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * With `BENCH_HEAP_SAMPLE_DIR`, a host samples every allocation (one in ~`BENCH_HEAP_SAMPLE_BYTES`, 4096) from its start
 * to its stop, including objects a scavenge or a full collection already freed: that is where a burst's GC time comes
 * from, and `--heap-prof` keeps only the survivors. The profile is written as `<kind>-<pid>.heapprofile` (the format
 * Chrome DevTools opens) and summarized by `node --import=tsx bench/lib/heap-sample.ts <files>`.
 */
export async function startHeapSampling(kind: string): Promise<(() => Promise<void>) | undefined> {
  const dir = process.env['BENCH_HEAP_SAMPLE_DIR'];
  if (dir === undefined || dir === '') return undefined;
  // Imported only when asked for: every host loads this module, and its memory figures must not carry the inspector's.
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env['BENCH_HEAP_SAMPLE_BYTES'] ?? 4096),
    includeObjectsCollectedByMinorGC: true,
    includeObjectsCollectedByMajorGC: true,
  });
  return async () => {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${kind}-${process.pid}.heapprofile`), JSON.stringify(profile));
    session.disconnect();
  };
}

type SampleNode = {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number };
  readonly selfSize: number;
  readonly children: readonly SampleNode[];
};

/** Sampled bytes by allocating frame (self) and by frame anywhere on the stack (total), largest first. */
export function summarizeHeapSample(head: SampleNode, top = 25): string {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  const walk = (node: SampleNode, stack: ReadonlySet<string>): number => {
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    const name = `${functionName === '' ? '(anonymous)' : functionName} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}:${columnNumber + 1}`;
    self.set(name, (self.get(name) ?? 0) + node.selfSize);
    all += node.selfSize;
    let sum = node.selfSize;
    const inner = new Set(stack).add(name);
    for (const child of node.children) sum += walk(child, inner);
    // counted once per subtree even when the frame recurses
    if (!stack.has(name)) total.set(name, (total.get(name) ?? 0) + sum);
    return sum;
  };
  walk(head, new Set());
  const rows = (map: Map<string, number>): string =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, bytes]) => `  ${((100 * bytes) / all).toFixed(1).padStart(5)} %  ${name}`).join('\n');
  return `sampled ${(all / 1e6).toFixed(1)} MB\nself:\n${rows(self)}\ntotal (frame on the stack):\n${rows(total)}`;
}

if (process.argv[1]?.endsWith('heap-sample.ts') === true) {
  for (const file of process.argv.slice(2)) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: SampleNode };
    process.stdout.write(`${file}\n${summarizeHeapSample(profile.head, Number(process.env['TOP'] ?? 25))}\n`);
  }
}
