// Tests the perf-script reader of bench/perf-summary.ts on a hand-written excerpt in perf's own format.
import t from 'tap';
import { bucketOf, parseScript, summarize } from '../../bench/perf-summary.js';

const SCRIPT = `node  100   1.000:     500000 cpu-clock: 
\t          10aba4 __send+0x64 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    7f1240370e9d JS:^message file:///x/chunk.js:40:17517+0x31d (/tmp/perf-100.map)

node  100   1.001:     500000 cpu-clock: 
\t    7f1240379636 JS:^Nl file:///x/chunk.js:4:22440+0x236 (/tmp/perf-100.map)
\t    7f1240370e9d JS:^message file:///x/chunk.js:40:17517+0x31d (/tmp/perf-100.map)

node  100   1.002:     500000 cpu-clock: 
\t    7f1240379636 JS:^flush file:///x/chunk.js:4:1+0x2 (/tmp/perf-100.map)
\t    7f1240370e9d JS:^processImmediate node:internal/timers:438:28+0x779 (/tmp/perf-100.map)

node  100   1.003:     500000 cpu-clock: 
\t          abcdef v8::internal::Heap::CollectGarbage+0x1 (/usr/bin/node)

node  107   1.004:     500000 cpu-clock: 
\t          f1827 v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal+0x1 (/usr/bin/node)

node  108   1.005:     500000 cpu-clock: 
\t          12345 mdb_txn_commit+0x10cc (/x/node.abi115.glibc.node)
`;

t.test('parseScript reads one sample per header with its frames, leaf first', async (t) => {
  const samples = parseScript(SCRIPT);
  t.equal(samples.length, 6);
  t.same(samples[0], { tid: '100', frames: ['__send+0x64', 'JS:^message file:///x/chunk.js:40:17517+0x31d'] });
  t.equal(samples[5]?.tid, '108');
});

t.test('bucketOf: the busiest thread is the main thread; sends before JS; JS by its outermost frame', async (t) => {
  const samples = parseScript(SCRIPT);
  t.same(
    samples.map((sample) => bucketOf(sample, '100')),
    ['main: socket send', 'main: JS message', 'main: JS processImmediate', 'main: GC', 'thread: JIT compile', 'thread: LMDB writer'],
  );
  const buckets = summarize(samples);
  t.equal(buckets.get('main: JS message'), 1);
  t.equal([...buckets.values()].reduce((a, b) => a + b, 0), 6);
});
