// Tests the mcp-tools strategy: a real MCP server (@modelcontextprotocol/sdk, streamable HTTP) on loopback, tools chosen by a fake model.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import t from 'tap';
import { z } from 'zod';
import { dataOf } from '../helpers/directory.js';
import { fakeOpenAi } from '../helpers/fake-llm.js';
import { pageServer } from '../helpers/pages.js';
import { directoryFixtureWith, runToEnd } from './run-env.js';

t.test('mcp-tools: the model plans a call, the MCP tool answers, its answer reaches the findings step', async (t) => {
  const calls: Array<{ sku: string; auth: string | undefined }> = [];
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const server = new McpServer({ name: 'catalog', version: '1.0.0' });
      server.registerTool('price_of', { description: 'Price of a product by SKU', inputSchema: { sku: z.string() } }, ({ sku }) => {
        calls.push({ sku, auth: req.headers.authorization });
        return { content: [{ type: 'text', text: `price of ${sku} is 49 EUR` }] };
      });
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
      res.on('close', () => void transport.close());
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      void server.connect(transport).then(() => transport.handleRequest(req, res, body));
    });
  };
  const mcp = await pageServer(t, { '/mcp': handle });
  const pages = await pageServer(t, { '/product': { body: '<html><body><h1>Widget</h1><p>Only 39 EUR!</p></body></html>' } });
  const llm = await fakeOpenAi(t);
  const f = await directoryFixtureWith(t, { agentPoolSize: 1, outboundAllowedNetworks: ['127.0.0.0/8'], llmABaseUrl: llm.baseUrl, llmAModel: 'm' });
  const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', {
    name: 'Prices', description: 'Checks prices against the catalog', enabled: true,
    instructions: 'Check that the price on the page matches the catalog price of SKU W-1.',
    contextGathering: { strategies: ['web-page-text'] },
    execution: { executionStrategy: 'mcp-tools', mcpServers: [{ name: 'catalog', url: `${mcp.url}/mcp`, auth: { type: 'bearer', token: 'mcp-secret' } }] },
  }));
  llm.answers = [
    JSON.stringify({ calls: [{ server: 0, tool: 'price_of', arguments: { sku: 'W-1' } }] }),
    JSON.stringify({ findings: [{ title: 'Price differs from catalog', description: 'Catalog says 49 EUR', severity: 'high', issueType: 'price-mismatch', targetText: 'Only 39 EUR!', suggestion: 'Only 49 EUR!' }] }),
  ];
  const run = await runToEnd(t, f, { agentId, url: `${pages.url}/product` });
  t.equal(run.status, 'completed', JSON.stringify(run.error));
  t.same(calls, [{ sku: 'W-1', auth: 'Bearer mcp-secret' }], 'the tool ran once, with the stored (opened) secret');
  t.ok(JSON.stringify(llm.requests[0]).includes('price_of'), 'the planner saw the tool list');
  t.ok(JSON.stringify(llm.requests[1]).includes('price of W-1 is 49 EUR'), 'the findings step saw the tool answer');
  t.match(run.results, [{ issueType: 'price-mismatch', targetText: 'Only 39 EUR!' }]);
  t.match(run['summary'], { context: { mcp: { tools: 1, calls: ['0:price_of'] } } });
});
