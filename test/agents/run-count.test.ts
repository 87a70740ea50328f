// Tests the run count's status keys on a store written before them (schema 3): indexed once at start, counted without reading a record.
import t from 'tap';
import type { Key } from 'lmdb';
import type { CollabDocuments } from '../../src/doc/collab-state.js';
import type { AgentDefinitions } from '../../src/agents/definitions.js';
import type { AgentPool } from '../../src/agents/pool.js';
import { AgentRuns } from '../../src/agents/runs.js';
import type { ExecutionRecord } from '../../src/agents/runs.js';
import type { WorkerEnv } from '../../src/agents/tasks.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';

/** Counting and indexing read only the store; the other parts are never reached here. */
function runsOn(store: Store): AgentRuns {
  const unused = {} as unknown;
  return new AgentRuns({ store, definitions: unused as AgentDefinitions, pool: unused as AgentPool, collab: unused as CollabDocuments, env: unused as WorkerEnv, log: createLogger('silent') });
}

function run(executionId: string, agentId: string, status: ExecutionRecord['status'], createdAt: number): ExecutionRecord {
  return { executionId, agentId, agentName: agentId, agentVersion: null, url: 'https://example.com/', organizationId: 'o', documentId: 'd', status, createdAt, completedAt: null, error: null, summary: null, node: 'local' };
}

t.test('runs recorded before the status keys are counted once those are built; a fresh directory is only marked', async (t) => {
  const dir = t.testdir();
  const old = Store.open(dir);
  await old.transaction(() => {
    const db = old.records<unknown>(DB.agentExecutions);
    const rows = [run('e1', 'readability', 'completed', 1), run('e2', 'readability', 'failed', 2), run('e3', 'broken-links', 'completed', 3), run('e4', 'broken-links', 'cancelled', 4)];
    for (const row of rows) {
      db.putSync(['key-1', row.createdAt, row.executionId] as Key, row);
      db.putSync(['key-1', '#', row.executionId] as Key, row.createdAt);
    }
    db.putSync(['key-2', 9, 'e9'] as Key, run('e9', 'readability', 'completed', 9));
    old.records<number>(DB.meta).putSync('schemaVersion', 3);
  });
  await old.close();

  const store = Store.open(dir);
  t.teardown(() => store.close());
  const runs = runsOn(store);
  t.equal(runs.count('key-1', undefined).total, 0, 'before the build the status keys are missing');
  t.equal(await runs.buildStatusIndex(), 5);
  t.equal(await runs.buildStatusIndex(), 0, 'once');
  t.same(runs.count('key-1', undefined), { total: 4, byStatus: { running: 0, completed: 2, failed: 1, cancelled: 1 }, byAgent: { readability: 2, 'broken-links': 2 } });
  t.same(runs.count('key-1', 'broken-links'), { total: 2, byStatus: { running: 0, completed: 1, failed: 0, cancelled: 1 }, byAgent: { 'broken-links': 2 } });
  t.same(runs.count('key-2', undefined).byAgent, { readability: 1 }, 'another API key counts its own');
  t.same(runs.list('key-1', { pageSize: 10 }).executions.map((e) => e.executionId), ['e4', 'e3', 'e2', 'e1'], 'the list still sees only the runs, not their status keys');

  const fresh = Store.open(t.testdir());
  t.teardown(() => fresh.close());
  t.equal(await runsOn(fresh).buildStatusIndex(), 0);
  t.equal(fresh.records<unknown>(DB.meta).get('runStatusIndexBuilt'), true);
});
