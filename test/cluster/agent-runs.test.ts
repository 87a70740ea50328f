// Tests agent runs in a cluster: executed once by the node that started them, never failed by a node joining, failed by the worker when their node dies.
import t from 'tap';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { pageServer } from '../helpers/pages.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { PAGE } from '../agents/run-env.js';
import { holdsWorker, nodeEnv, until } from '../helpers/cluster.js';

interface Execution {
  status: string;
  error: { code: string; message: string } | null;
  node?: string;
}

t.test('agent runs: once, on the node that started them; a joining node leaves them alone; the worker fails the runs of a killed node', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const pages = await pageServer(t, { '/page': { body: PAGE }, '/ok': { body: '<p>ok</p>' }, '/img/logo.png': { type: 'image/png', body: 'png' } });
  const dataDir = t.testdir();
  const env = (nodeId: string): Record<string, string> => nodeEnv(dataDir, nats.url, nodeId, { AGENT_POOL_SIZE: '1', AGENT_FETCH_TIMEOUT_MS: '600000' });
  const a1 = await startServerProcess(t, env('a1'));
  const a2 = await startServerProcess(t, env('a2'));
  t.ok(holdsWorker(a1), 'a1 is the worker');
  const url = (node: ServerProcess): string => `http://127.0.0.1:${node.port}`;
  const api1 = new ApiClient(url(a1));
  const api2 = new ApiClient(url(a2));
  const credentials: Credentials = await api1.createWorkspace();
  const execution = (api: ApiClient, executionId: string) => async (): Promise<Execution | undefined> =>
    (await api.call<{ execution: Execution }>(credentials, '/v2/agents/execution/get', { executionId })).body.result?.data.execution;
  const run = async (): Promise<string> => {
    const started = await api2.call<{ executionId: string }>(credentials, '/v2/agents/execution/run', { organizationId: 'org', documentId: 'doc', agentId: 'broken-links', url: `${pages.url}/page` });
    t.equal(started.status, 200, 'a run started on a2');
    return started.body.result?.data.executionId ?? '';
  };

  // A run in progress on a2 while a third node joins: the joining node must not take it for an interrupted one.
  let held = pages.hold('/page');
  const first = await run();
  await held.arrived;
  const a3 = await startServerProcess(t, env('a3'));
  const seen = await execution(new ApiClient(url(a3)), first)();
  t.equal(seen?.status, 'running', 'still running after a3 joined (a starting node no longer fails every running run)');
  t.equal(seen?.node, undefined, 'the executing node is internal: not in the reply');
  held.release();
  const done = await until(execution(api1, first), (value) => value?.status !== 'running');
  t.equal(done?.status, 'completed', 'it completed on a2');
  t.equal(pages.requests.filter((request) => request === 'GET /page').length, 1, 'executed once: one node fetched the page');

  // Cancelled through a node that does not run it: the cancel is forwarded to a2, whose pool ends it.
  held = pages.hold('/page');
  const cancelled = await run();
  await held.arrived;
  const cancel = await api1.call<{ execution: Execution }>(credentials, '/v2/agents/execution/cancel', { executionId: cancelled });
  t.equal(cancel.status, 200, 'a cancel sent to a1 was answered');
  t.equal(cancel.body.result?.data.execution.status, 'cancelled', 'by a2, which cancelled the run it executes');
  held.release();

  // A run in progress on a2 when a2 is killed: once a2's liveness lapses, the worker (a1) fails it as interrupted.
  held = pages.hold('/page');
  const second = await run();
  await held.arrived;
  a2.child.kill('SIGKILL');
  await a2.exited;
  const interrupted = await until(execution(api1, second), (value) => value?.status !== 'running');
  t.equal(interrupted?.status, 'failed');
  t.equal(interrupted?.error?.code, 'INTERRUPTED', 'the worker marked the dead node\'s run interrupted');
  await until(() => Promise.resolve(a1.stdout()), (out) => out.includes('interrupted agent runs marked failed'));
  t.pass('a1 logged it');
  t.equal(pages.requests.filter((request) => request === 'GET /page').length, 3, 'and nobody ran it again');
  held.release();
  for (const node of [a1, a3]) node.child.kill('SIGTERM');
  for (const node of [a1, a3]) t.equal(await node.exited, 0);
});
