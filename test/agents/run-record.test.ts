// Tests that a run's record and its agent's run count are one write: a count that cannot be written leaves no run behind.
import t from 'tap';
import type { Database, Key } from 'lmdb';
import type { AgentStats } from '../../src/agents/definitions.js';
import { DB } from '../../src/store/keys.js';
import { dataOf } from '../helpers/directory.js';
import { runToEnd, scope, setup } from './run-env.js';

/** Makes the next write to the agents' statistics throw inside its transaction (a store error), then writes as before. */
function failNextCount(stats: Database<AgentStats, Key>): { readonly failed: () => boolean } {
  const putSync = stats.putSync.bind(stats);
  let failed = false;
  stats.putSync = ((...args: Parameters<typeof putSync>) => {
    if (failed) return putSync(...args);
    failed = true;
    throw new Error('simulated store error writing the run count');
  }) as typeof stats.putSync;
  return { failed: () => failed };
}

t.test('a run whose count fails is not recorded: the call answers INTERNAL, no run is left running, the next run counts', async (t) => {
  const { f, pages } = await setup(t);
  const { runs } = f.server.services.agents;
  const countFailure = failNextCount(f.server.services.store.records<AgentStats>(DB.agentStats));

  const refused = await f.call('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}/page` });
  t.ok(countFailure.failed(), 'the count write failed');
  t.equal(refused.status, 500);
  t.match(refused.body.error, { status: 'INTERNAL' });
  const listed = dataOf(t, await f.call<{ executions: Array<{ status: string }> }>('/v2/agents/execution/list', {}));
  t.same(listed.executions, [], 'the record was rolled back with the count: no run is left `running`');
  t.equal(await runs.recover(), 0, 'recovery finds nothing to fail');
  t.equal(dataOf(t, await f.call<{ total: number }>('/v2/agents/execution/count', {})).total, 0);

  // The pool place was given back, and the next run is recorded with its count.
  const run = await runToEnd(t, f, { agentId: 'readability', url: `${pages.url}/page` });
  t.equal(run.status, 'completed', `the next run completes: ${JSON.stringify(run.error)}`);
  const agents = dataOf(t, await f.call<{ agents: Array<{ id: string; executionCount: number }> }>('/v2/agents/get', { filter: 'defaultOnly' })).agents;
  t.match(agents.find((agent) => agent.id === 'readability'), { executionCount: 1 }, 'only the recorded run is counted');
});

t.test('a run whose final count (its tokens) fails settles failed with INTERNAL, not running until recovery', async (t) => {
  const { f, pages } = await setup(t);
  const { runs } = f.server.services.agents;
  const held = pages.hold('/slow');
  const { executionId } = dataOf(t, await f.call<{ executionId: string }>('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}/slow` }));
  // The run is recorded and counted; its worker waits for the page. The write at its end (record and tokens) fails once.
  await held.arrived;
  const countFailure = failNextCount(f.server.services.store.records<AgentStats>(DB.agentStats));
  held.release();
  await runs.finished(executionId);
  t.ok(countFailure.failed(), 'the final write failed');
  const run = dataOf(t, await f.call<{ execution: { status: string; error: unknown } }>('/v2/agents/execution/get', { executionId })).execution;
  t.match(run, { status: 'failed', error: { code: 'INTERNAL' } }, 'settled at once, by the failure\'s own write');
  t.equal(await runs.recover(), 0, 'nothing left for recovery');
  t.match(f.server.services.agents.definitions.statsOf(f.credentials.apiKey, 'readability'), { executionCount: 1 }, 'the start was counted with its record');
});
