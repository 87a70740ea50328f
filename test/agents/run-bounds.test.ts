// Tests the bounds of agent runs: SSRF refusals, the queue limit and cancellation.
import t from 'tap';
import { dataOf, expectError } from '../helpers/directory.js';
import { pageServer } from '../helpers/pages.js';
import { directoryFixtureWith, PAGE, runToEnd, scope, setup } from './run-env.js';

t.test('SSRF: private, link-local and loopback targets are refused without the allow-list, and so is a redirect to one', async (t) => {
  const pages = await pageServer(t, { '/page': { body: PAGE } });
  const f = await directoryFixtureWith(t, { outboundAllowedNetworks: [], agentPoolSize: 1 });
  for (const url of [`${pages.url}/page`, 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data/', `http://[::1]:${pages.port}/page`, `http://localhost:${pages.port}/page`]) {
    const run = await runToEnd(t, f, { agentId: 'readability', url });
    t.equal(run.status, 'failed', url);
    t.equal(run.error?.code, 'BLOCKED_ADDRESS', url);
  }
  t.same(pages.requests, [], 'no request reached the loopback server');

  const redirecting = await pageServer(t, { '/go': { status: 302, headers: { location: `http://127.0.0.2:${pages.port}/page` } } });
  const g = await directoryFixtureWith(t, { outboundAllowedNetworks: ['127.0.0.1/32'], agentPoolSize: 1 });
  const run = await runToEnd(t, g, { agentId: 'readability', url: `${redirecting.url}/go` });
  t.equal(run.error?.code, 'BLOCKED_ADDRESS', 'the redirect target is checked too');
});

t.test('bounded: queue limit answers RESOURCE_EXHAUSTED, cancellation ends a run, the time limit fails one', async (t) => {
  const { f, pages } = await setup(t, { agentPoolSize: 1, agentQueueLimit: 1, agentRunTimeoutMs: 20_000 });
  const held = pages.hold('/slow');
  const first = dataOf(t, await f.call<{ executionId: string }>('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}/slow` }));
  await held.arrived;
  const second = dataOf(t, await f.call<{ executionId: string }>('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}/page` }));
  const third = await f.call('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}/page` });
  t.equal(third.status, 429);
  expectError(t, third, 'RESOURCE_EXHAUSTED', /agent queue is full/);

  t.match(dataOf(t, await f.call('/v2/agents/execution/count', {})), { total: 2, byStatus: { running: 2, completed: 0 } }, 'both counted running');
  const cancelled = dataOf(t, await f.call<{ execution: { status: string; error: { code: string } } }>('/v2/agents/execution/cancel', { executionId: first.executionId }));
  t.match(cancelled.execution, { status: 'cancelled', error: { code: 'CANCELLED' } });
  held.release();
  await f.server.services.agents.runs.finished(second.executionId);
  const secondRun = dataOf(t, await f.call<{ execution: { error: unknown } }>('/v2/agents/execution/get', { executionId: second.executionId })).execution;
  t.match(secondRun, { status: "completed" }, JSON.stringify([secondRun.error, pages.requests]));
  expectError(t, await f.call('/v2/agents/execution/cancel', { executionId: second.executionId }), 'FAILED_PRECONDITION', /completed, not running/);
  const settled = { total: 2, byStatus: { running: 0, completed: 1, failed: 0, cancelled: 1 }, byAgent: { readability: 2 } };
  t.same(dataOf(t, await f.call('/v2/agents/execution/count', {})), settled, 'each run counted once, under its final status');
  t.same(dataOf(t, await f.call('/v2/agents/execution/count', { agentId: 'readability' })), settled);
  t.same(dataOf(t, await f.call('/v2/agents/execution/count', { agentId: 'broken-links' })), { total: 0, byStatus: { running: 0, completed: 0, failed: 0, cancelled: 0 }, byAgent: {} });
});

t.test('per API key: a key at AGENT_TASKS_PER_KEY gets 429 while another workspace\'s key is taken, and goes first; a waiting run cancelled over REST ends cancelled and frees its place', async (t) => {
  const { f, pages } = await setup(t, { agentPoolSize: 1, agentQueueLimit: 10, agentTasksPerKey: 2 });
  const start = async (call: typeof f.call, path: string): Promise<string> => dataOf(t, await call<{ executionId: string }>('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}${path}` })).executionId;
  const held = pages.hold('/slow');
  const first = await start(f.call, '/slow');
  await held.arrived;
  const waiting = await start(f.call, '/page');
  const refused = await f.call('/v2/agents/execution/run', { ...scope, agentId: 'readability', url: `${pages.url}/page` });
  t.equal(refused.status, 429);
  expectError(t, refused, 'RESOURCE_EXHAUSTED', /has 2 agent tasks waiting or running.*AGENT_TASKS_PER_KEY/);

  const other = await f.api.createWorkspace();
  const theirs = await start((path, data) => f.api.call(other, path, data), '/ok');

  const cancelled = dataOf(t, await f.call<{ execution: { status: string; error: { code: string } } }>('/v2/agents/execution/cancel', { executionId: waiting }));
  t.match(cancelled.execution, { status: 'cancelled', error: { code: 'CANCELLED' } }, 'the waiting run left the queue, cancelled');
  const again = await start(f.call, '/page');
  held.release();
  const runs = f.server.services.agents.runs;
  await Promise.all([first, theirs, again].map((id) => runs.finished(id)));
  t.same(pages.requests, ['GET /slow', 'GET /ok', 'GET /page'], 'each admitted run fetched its page; the cancelled run fetched nothing');
  t.equal(runs.get(f.credentials.apiKey, again, false).status, 'completed');
  t.equal(runs.get(other.apiKey, theirs, false).status, 'completed');
});
