// Tests that agent secrets and provider keys appear in no log line at debug level, through create, get, runs and failures.
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { ApiClient } from '../helpers/api.js';
import { fakeOpenAi } from '../helpers/fake-llm.js';
import { pageServer } from '../helpers/pages.js';
import { testConfig } from '../helpers/server.js';

t.test('no secret reaches a log line', async (t) => {
  const seen: string[] = [];
  const api = await pageServer(t, {
    '/data': (req, res) => {
      seen.push(String(req.headers.authorization));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    },
  });
  const llm = await fakeOpenAi(t);
  llm.answers = ['not json at all'];
  const lines: string[] = [];
  const config = testConfig(t.testdir(), { logLevel: 'debug', outboundAllowedNetworks: ['127.0.0.0/8'], agentPoolSize: 1, llmABaseUrl: llm.baseUrl, llmAModel: 'm', llmAApiKey: 'sk-provider-key-77' });
  const server = await startServer(config, createLogger('debug', {}, (line) => lines.push(line)));
  t.teardown(() => server.stop());
  const client = new ApiClient(`http://127.0.0.1:${server.port}`);
  const creds = await client.createWorkspace();
  const created = await client.call<{ agentId: string }>(creds, '/v2/agents/create', {
    name: 'Secretive', description: 'uses secrets', enabled: true, instructions: 'Compare the API data with the page.',
    contextGathering: { strategies: ['rest-api'], strategyOptions: { 'rest-api': { url: `${api.url}/data`, auth: { type: 'bearer', token: 'rest-token-55' } } } },
    execution: {},
  });
  const agentId = created.body.result?.data.agentId ?? '';
  await client.call(creds, '/v2/agents/get', { agentId });
  await client.call(creds, '/v2/agents/version/update', { agentId, execution: { executionStrategy: 'mcp-tools', mcpServers: [{ url: 'http://127.0.0.1:1/mcp', auth: { token: 'mcp-token-66' } }] } });
  await client.call(creds, '/v2/agents/version/update', { agentId, execution: {} });
  const run = await client.call<{ executionId: string }>(creds, '/v2/agents/execution/run', { agentId, url: `${api.url}/data`, organizationId: 'o', documentId: 'd' });
  await server.services.agents.runs.finished(run.body.result?.data.executionId ?? '');
  t.same(seen, ['Bearer rest-token-55'], 'the run used the opened secret');
  t.ok(lines.length > 0, 'something was logged');
  for (const secret of ['rest-token-55', 'mcp-token-66', 'sk-provider-key-77']) t.notOk(lines.some((line) => line.includes(secret)), `${secret} is in no log line`);
});
