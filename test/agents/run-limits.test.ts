// Tests the limits of agent runs: the per-run time limit ends a worker, a crashing worker fails only its task.
import t from 'tap';
import { runToEnd, setup } from './run-env.js';

t.test('the per-run time limit ends the worker and fails the run with TIMEOUT', async (t) => {
  const { f, pages } = await setup(t, { agentRunTimeoutMs: 1000, agentPoolSize: 1 });
  pages.hold('/slow');
  const run = await runToEnd(t, f, { agentId: 'readability', url: `${pages.url}/slow` });
  t.match(run, { status: 'failed', error: { code: 'TIMEOUT' } });
  const next = await runToEnd(t, f, { agentId: 'readability', url: `${pages.url}/page` });
  t.equal(next.status, 'completed', `the pool goes on: ${JSON.stringify(next.error)}`);
});

t.test('a crashing worker fails its task, not the process; the pool goes on', async (t) => {
  const { f, pages } = await setup(t, { agentPoolSize: 1 });
  await t.rejects(f.server.services.agents.pool.run(f.credentials.apiKey, { kind: 'crash' }), { code: 'WORKER_CRASHED' });
  const next = await runToEnd(t, f, { agentId: 'readability', url: `${pages.url}/page` });
  t.equal(next.status, 'completed');
});
