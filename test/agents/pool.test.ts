// Tests the agent pool: its lazy start, the stop, and fairness across API keys (per-key limit, round-robin start order, cancelling a waiting task, the queue-wide limit).
import t, { type Test } from 'tap';
import { builtInAgent } from '../../src/agents/catalog.js';
import { AgentPool } from '../../src/agents/pool.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import type { RunTask, WorkerEnv } from '../../src/agents/tasks.js';
import { pageServer, type PageServer } from '../helpers/pages.js';

const options = { size: 1, queueLimit: 4, taskTimeoutMs: 10_000 };

const env: WorkerEnv = { allowedNetworks: ['127.0.0.0/8'], providers: [], fetchTimeoutMs: 10_000, fetchMaxBytes: 1024 * 1024, chromiumPath: undefined };
const readability = builtInAgent('readability');
if (readability === undefined) throw new Error('the built-in readability agent is missing');
const PAGE = '<!doctype html><html lang="en"><head><title>Page</title></head><body><p>A short page.</p></body></html>';

/** A real agent run (readability, no model) that fetches `path`: the page server's request log shows the order tasks started in. */
const fetching = (pages: PageServer, path: string): RunTask => ({ kind: 'run', env, url: `${pages.url}${path}`, agentId: 'readability', behaviour: readability.behaviour, userContext: {} });

async function pagesAt(t: Test, paths: readonly string[]): Promise<PageServer> {
  return pageServer(t, Object.fromEntries(paths.map((path) => [path, { body: PAGE }])));
}

/**
 * A pool (closed at teardown) whose one thread is busy with key A's task fetching `first`, held by the page server
 * until `held.release()`: what waits behind it shows the start order.
 */
async function busyPool(t: Test, paths: readonly string[], limits: { queueLimit?: number; perKeyLimit?: number; taskTimeoutMs?: number }, first = paths[0] ?? '/a1') {
  const pages = await pagesAt(t, paths);
  const pool = new AgentPool({ ...options, ...limits });
  t.teardown(() => pool.close());
  const held = pages.hold(first);
  const running = pool.run('key-a', fetching(pages, first));
  await held.arrived;
  return { pages, pool, held, running };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

t.test('an unused pool starts nothing and closes cleanly', async (t) => {
  const pool = new AgentPool(options);
  t.same(pool.stats(), { threads: 0, queued: 0, utilization: 0 });
  pool.admit('key-a').release();
  await pool.close();
  t.same(pool.stats(), { threads: 0, queued: 0, utilization: 0 }, 'closing made no pool');
  await t.rejects(pool.run('key-a', { kind: 'crash' }), { code: 'UNAVAILABLE' }, 'a closed pool refuses');
});

t.test('a run whose pool is still being made when the stop begins is refused, and the pool made meanwhile is destroyed', async (t) => {
  const pool = new AgentPool(options);
  // run() imports piscina first; close() is called before that import has settled.
  const running = pool.run('key-a', { kind: 'crash' });
  const closing = pool.close();
  await t.rejects(running, { code: 'UNAVAILABLE', message: /stopping/ });
  await closing;
  t.equal(pool.stats().threads, 0, 'no worker thread left');
});

t.test('the first run starts the pool; a crashing task fails alone', async (t) => {
  const pool = new AgentPool(options);
  t.teardown(() => pool.close());
  await t.rejects(pool.run('key-a', { kind: 'crash' }), { code: 'WORKER_CRASHED' });
  t.equal(pool.stats().threads, 1, 'the pool keeps its one thread (minThreads = size)');
});

t.test('a key at its limit is refused while another key is admitted', async (t) => {
  const { pages, pool, held, running: a1 } = await busyPool(t, ['/a1', '/a2', '/b1'], { queueLimit: 10, perKeyLimit: 2 });
  const a2 = pool.run('key-a', fetching(pages, '/a2'));
  const refusedBefore = limitRefusals.agent_tasks_per_key;
  await t.rejects(pool.run('key-a', fetching(pages, '/a3')), { status: 'RESOURCE_EXHAUSTED', httpStatus: 429, retryAfterSeconds: 5, message: /has 2 agent tasks waiting or running.*AGENT_TASKS_PER_KEY/ });
  t.equal(limitRefusals.agent_tasks_per_key, refusedBefore + 1, 'the refusal is counted (plait_limit_refusals_total)');
  const b1 = pool.run('key-b', fetching(pages, '/b1'));
  held.release();
  await Promise.all([a1, a2, b1]);
  t.same(pages.requests, ['GET /a1', 'GET /b1', 'GET /a2'], 'the admitted tasks of both keys ran, B\'s before A\'s second; the refused one never');
  // Once its tasks have ended the key has its whole share again.
  pool.admit('key-a').release();
});

t.test('tasks start round-robin across keys: a key arriving behind another key\'s backlog starts next', async (t) => {
  const { pages, pool, held, running } = await busyPool(t, ['/a1', '/a2', '/a3', '/a4', '/b1', '/b2', '/c1'], { queueLimit: 10, perKeyLimit: 10 });
  const runs = [running];
  // Key A's backlog is queued first, then key B's two tasks and key C's one.
  for (const path of ['/a2', '/a3', '/a4']) runs.push(pool.run('key-a', fetching(pages, path)));
  await until(() => pool.stats().queued === 3);
  for (const path of ['/b1', '/b2']) runs.push(pool.run('key-b', fetching(pages, path)));
  runs.push(pool.run('key-c', fetching(pages, '/c1')));
  await until(() => pool.stats().queued === 6);
  held.release();
  await Promise.all(runs);
  // One thread, so tasks ran one at a time in the order they started. A had the last turn (a1), so B and C go first.
  t.same(pages.requests, ['GET /a1', 'GET /b1', 'GET /c1', 'GET /a2', 'GET /b2', 'GET /a3', 'GET /a4']);
});

t.test('cancelling a waiting task takes it out of the queue and frees its key\'s share', async (t) => {
  const { pages, pool, held, running: a1 } = await busyPool(t, ['/a1', '/a2', '/a3'], { queueLimit: 10, perKeyLimit: 2 });
  const cancel = new AbortController();
  const a2 = pool.run('key-a', fetching(pages, '/a2'), cancel.signal);
  await until(() => pool.stats().queued === 1);
  t.throws(() => pool.admit('key-a'), { status: 'RESOURCE_EXHAUSTED', message: /AGENT_TASKS_PER_KEY/ }, 'key A is at its limit');
  cancel.abort();
  await t.rejects(a2, { code: 'CANCELLED' });
  t.equal(pool.stats().queued, 0, 'the cancelled task left the queue');
  const a3 = pool.run('key-a', fetching(pages, '/a3'));
  held.release();
  await Promise.all([a1, a3]);
  t.same(pages.requests, ['GET /a1', 'GET /a3'], 'the cancelled task never ran; the one admitted in its place did');
});

t.test('the queue-wide limit holds over every key', async (t) => {
  const { pages, pool, held, running: a1 } = await busyPool(t, ['/a1', '/b1', '/c1'], { queueLimit: 2, perKeyLimit: 10 });
  const waiting = [pool.run('key-b', fetching(pages, '/b1')), pool.run('key-c', fetching(pages, '/c1'))];
  await t.rejects(pool.run('key-d', fetching(pages, '/d1')), { status: 'RESOURCE_EXHAUSTED', message: /agent queue is full \(2 waiting; AGENT_QUEUE_LIMIT\)/ });
  t.throws(() => pool.admit('key-a'), { status: 'RESOURCE_EXHAUSTED', message: /AGENT_QUEUE_LIMIT/ }, 'a key under its own limit is refused too');
  held.release();
  await Promise.all([a1, ...waiting]);
});

t.test('a waiting task is not timed: it runs after waiting longer than the time limit', async (t) => {
  const pages = await pagesAt(t, ['/slow', '/next']);
  const pool = new AgentPool({ ...options, taskTimeoutMs: 1000 });
  t.teardown(() => pool.close());
  const held = pages.hold('/slow');
  t.teardown(held.release);
  const slow = pool.run('key-a', fetching(pages, '/slow'));
  await held.arrived;
  const next = pool.run('key-b', fetching(pages, '/next'));
  // The slow task ends at its time limit (1 s), all of which the next task spent waiting; then the next one runs.
  await t.rejects(slow, { code: 'TIMEOUT' });
  t.match(await next, { findings: Array, usage: { promptTokens: 0 } }, 'the task that waited ran to its end');
});

t.test('closing the pool fails the waiting tasks with UNAVAILABLE', async (t) => {
  const pages = await pagesAt(t, ['/a1', '/b1']);
  const pool = new AgentPool(options);
  const held = pages.hold('/a1');
  t.teardown(held.release);
  const a1 = pool.run('key-a', fetching(pages, '/a1'));
  await held.arrived;
  const b1 = pool.run('key-b', fetching(pages, '/b1'));
  await until(() => pool.stats().queued === 1);
  // Both settle while close() runs: their expectations are attached first.
  const refused = t.rejects(b1, { code: 'UNAVAILABLE', message: /stopping/ }, 'the waiting task is refused');
  const ended = t.rejects(a1, { code: 'WORKER_CRASHED' }, 'the running task ends with its thread');
  await pool.close();
  await Promise.all([refused, ended]);
  t.notOk(pages.requests.includes('GET /b1'), 'the waiting task never ran');
});
