// Checks the bench's reading of the environment `npm start` gives node, and its override for a before/after.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { startScriptEnv } from '../../bench/lib/launch.js';

t.test('the NAME=value words before node in the start script are the environment Plait runs with', async (t) => {
  t.same(startScriptEnv('node --max-semi-space-size=2 dist/bundle/main.js'), {});
  t.same(startScriptEnv('MALLOC_ARENA_MAX=2 LMDB_X=a=b node --max-semi-space-size=2 dist/bundle/main.js'), { MALLOC_ARENA_MAX: '2', LMDB_X: 'a=b' });
  t.throws(() => startScriptEnv('cross-env node dist/bundle/main.js'), /not a NAME=value word before node/);
});

t.test('BENCH_PLAIT_ENV replaces it: words, or nothing when empty', async (t) => {
  const start = 'MALLOC_ARENA_MAX=2 node dist/bundle/main.js';
  t.same(startScriptEnv(start, ''), {});
  t.same(startScriptEnv(start, ' MALLOC_ARENA_MAX=4  MALLOC_TRIM_THRESHOLD_=131072 '), { MALLOC_ARENA_MAX: '4', MALLOC_TRIM_THRESHOLD_: '131072' });
  t.throws(() => startScriptEnv(start, 'MALLOC_ARENA_MAX'), /in BENCH_PLAIT_ENV/);
});

t.test("the package's own start script parses", async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
  // npm start caps glibc's malloc arenas (README, Quick start), and the bench must run Plait the same way.
  t.same(startScriptEnv(pkg.scripts['start'] ?? ''), { MALLOC_ARENA_MAX: '2' });
});
