// Tests the agent pool's lazy start: no thread before the first run, a run still being started when the stop begins is refused and its threads end.
import t from 'tap';
import { AgentPool } from '../../src/agents/pool.js';

const options = { size: 1, queueLimit: 4, taskTimeoutMs: 10_000 };

t.test('an unused pool starts nothing and closes cleanly', async (t) => {
  const pool = new AgentPool(options);
  t.same(pool.stats(), { threads: 0, queued: 0, utilization: 0 });
  pool.admit();
  await pool.close();
  t.same(pool.stats(), { threads: 0, queued: 0, utilization: 0 }, 'closing made no pool');
  await t.rejects(pool.run({ kind: 'crash' }), { code: 'UNAVAILABLE' }, 'a closed pool refuses');
});

t.test('a run whose pool is still being made when the stop begins is refused, and the pool made meanwhile is destroyed', async (t) => {
  const pool = new AgentPool(options);
  // run() imports piscina first; close() is called before that import has settled.
  const running = pool.run({ kind: 'crash' });
  const closing = pool.close();
  await t.rejects(running, { code: 'UNAVAILABLE', message: /stopping/ });
  await closing;
  t.equal(pool.stats().threads, 0, 'no worker thread left');
});

t.test('the first run starts the pool; a crashing task fails alone', async (t) => {
  const pool = new AgentPool(options);
  t.teardown(() => pool.close());
  await t.rejects(pool.run({ kind: 'crash' }), { code: 'WORKER_CRASHED' });
  t.equal(pool.stats().threads, 1, 'the pool keeps its one thread (minThreads = size)');
});
