// Tests agent run retention: settled runs past AGENT_RUN_RETENTION are removed with their keys; running ones and newer ones stay.
import t, { type Test } from 'tap';
import type { Key } from 'lmdb';
import type { CollabDocuments } from '../../src/doc/collab-state.js';
import type { AgentDefinitions } from '../../src/agents/definitions.js';
import type { AgentPool } from '../../src/agents/pool.js';
import { AgentRuns, type ExecutionRecord } from '../../src/agents/runs.js';
import type { WorkerEnv } from '../../src/agents/tasks.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { dataOf, expectError } from '../helpers/directory.js';
import { pageServer } from '../helpers/pages.js';
import { startTestServer } from '../helpers/server.js';
import { PAGE, scope } from './run-env.js';

const DAY = 86_400_000;

/** Pruning reads and writes only the store; the other parts are never reached here. */
function runsOn(store: Store, now: number, retentionMs: number): AgentRuns {
  const unused = {} as unknown;
  return new AgentRuns({ store, definitions: unused as AgentDefinitions, pool: unused as AgentPool, collab: unused as CollabDocuments, env: unused as WorkerEnv, log: createLogger('silent'), now: () => now, retentionMs });
}

function run(executionId: string, status: ExecutionRecord['status'], createdAt: number): ExecutionRecord {
  return { executionId, agentId: 'readability', agentName: 'Readability', agentVersion: null, url: 'https://example.com/', organizationId: 'o', documentId: 'd', status, createdAt, completedAt: null, error: null, summary: null, node: 'local' };
}

/**
 * A directory holding runs of two API keys, with their status keys built by the server's own backfill: e1, e4 and
 * e9 are settled and older than day 3, e2 is older but still running, e3 is newer.
 */
async function storeWithRuns(t: Test): Promise<Store> {
  const dir = t.testdir();
  const old = Store.open(dir);
  await old.transaction(() => {
    const db = old.records<unknown>(DB.agentExecutions);
    const rows: Array<[string, ExecutionRecord]> = [['key-1', run('e1', 'completed', 1 * DAY)], ['key-1', run('e2', 'running', 1 * DAY)], ['key-1', run('e3', 'failed', 5 * DAY)], ['key-1', run('e4', 'cancelled', 2 * DAY)], ['key-2', run('e9', 'completed', 1.5 * DAY)]];
    for (const [apiKey, row] of rows) {
      db.putSync([apiKey, row.createdAt, row.executionId] as Key, row);
      db.putSync([apiKey, '#', row.executionId] as Key, row.createdAt);
    }
    db.putSync([0, 'e2'] as Key, ['key-1', 1 * DAY]);
    old.records<number>(DB.meta).putSync('schemaVersion', 3);
  });
  await old.close();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  await runsOn(store, 0, 0).buildStatusIndex();
  return store;
}

t.test('a pass removes the settled runs created before now − retention, across API keys, with their id and status keys', async (t) => {
  const store = await storeWithRuns(t);
  const runs = runsOn(store, 6 * DAY, 3 * DAY);
  t.equal(await runs.prune(), 3, 'e1, e4 and e9');
  t.same(runs.list('key-1', { pageSize: 10 }).executions.map((e) => e.executionId), ['e3', 'e2'], 'the newer run and the running one stay');
  t.same(runs.count('key-1', undefined), { total: 2, byStatus: { running: 1, completed: 0, failed: 1, cancelled: 0 }, byAgent: { readability: 2 } });
  t.equal(runs.count('key-2', undefined).total, 0);
  t.throws(() => runs.get('key-1', 'e1', false), /execution e1 not found/, 'the id key went with the run');
  t.equal(runs.get('key-1', 'e2', false).status, 'running');
  const left = Array.from(store.records<unknown>(DB.agentExecutions).getKeys({})).map((key) => JSON.stringify(key));
  t.equal(left.length, 2 * 3 + 1, 'two runs with their id and status keys, and the running entry of e2');
  t.equal(await runs.prune(), 0, 'a second pass finds nothing');
});

t.test('batches: each transaction removes at most the batch, and the pass goes on until one comes back short', async (t) => {
  const store = await storeWithRuns(t);
  t.equal(await runsOn(store, 6 * DAY, 3 * DAY).prune(1), 3);
  t.equal(runsOn(store, 6 * DAY, 3 * DAY).count('key-1', undefined).total, 2);
});

t.test('retention off (0) keeps every run', async (t) => {
  const store = await storeWithRuns(t);
  const runs = runsOn(store, 1000 * DAY, 0);
  t.equal(await runs.prune(), 0);
  t.equal(runs.count('key-1', undefined).total, 4);
});

t.test('on a server: the worker role\'s first scan removes the runs past retention; newer runs and the run counts stay', async (t) => {
  const pages = await pageServer(t, { '/page': { body: PAGE }, '/ok': { body: '<p>ok</p>' }, '/img/logo.png': { type: 'image/png', body: 'png' } });
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  // Email verification off: the clock moves past the grace of a new workspace's keys.
  const server = await startTestServer(t, { outboundAllowedNetworks: ['127.0.0.0/8'], agentPoolSize: 1, agentRunRetentionMs: 30 * DAY, emailVerificationGraceMs: 0 }, undefined, { clock });
  const credentials = await server.api.createWorkspace();
  const runTo = async (s: typeof server): Promise<string> => {
    const { executionId } = dataOf(t, await s.api.call<{ executionId: string }>(credentials, '/v2/agents/execution/run', { ...scope, agentId: 'broken-links', url: `${pages.url}/page` }));
    await s.server.services.agents.runs.finished(executionId);
    return executionId;
  };
  const old = await runTo(server);
  offset = 20 * DAY;
  const recent = await runTo(server);

  offset = 40 * DAY;
  const restarted = await server.restart();
  const runs = restarted.server.services.agents.runs;
  const apiKey = credentials.apiKey;
  // The role is taken at start and its first scan prunes; wait for the pass to land, a turn at a time.
  while (runs.count(apiKey, undefined).total !== 1) await new Promise<void>((resolve) => setImmediate(resolve));
  expectError(t, await restarted.api.call(credentials, '/v2/agents/execution/get', { executionId: old }), 'NOT_FOUND', /not found/);
  t.equal(dataOf(t, await restarted.api.call<{ execution: { status: string } }>(credentials, '/v2/agents/execution/get', { executionId: recent })).execution.status, 'completed');
  const listed = dataOf(t, await restarted.api.call<{ executions: Array<{ executionId: string }> }>(credentials, '/v2/agents/execution/list', {}));
  t.same(listed.executions.map((e) => e.executionId), [recent]);
  const { agents } = dataOf(t, await restarted.api.call<{ agents: Array<{ id: string; executionCount: number }> }>(credentials, '/v2/agents/get', {}));
  t.equal(agents.find((a) => a.id === 'broken-links')?.executionCount, 2, 'the agent\'s statistics still count both runs');
});
