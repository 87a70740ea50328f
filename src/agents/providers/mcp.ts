// Owns the `mcp-tools` strategy: a real MCP client (@modelcontextprotocol/sdk) over streamable HTTP; the model picks tool calls.
import { Fetcher } from '../gather/fetcher.js';
import type { GatheredContext } from '../gather/gather.js';
import type { Behaviour, McpServer } from '../model.js';
import { RunError, type Finding, type Usage, type WorkerEnv } from '../tasks.js';
import { aiFindings } from './ai-findings.js';
import { complete, jsonOf, pickProvider } from './providers.js';

const MAX_CALLS = 5;
const RESULT_CAP = 20_000;

interface ToolRef {
  readonly server: number;
  readonly name: string;
  readonly description: string;
  readonly inputSchema: unknown;
}

function authHeaders(server: McpServer): Record<string, string> {
  const auth = server.auth as { type?: string; token?: string; name?: string; value?: string } | undefined;
  if (auth?.type === 'header' && auth.name !== undefined && auth.value !== undefined) return { [auth.name]: auth.value };
  if (auth?.token !== undefined) return { authorization: `Bearer ${auth.token}` };
  return {};
}

export interface McpStepInput {
  readonly env: WorkerEnv;
  readonly behaviour: Behaviour;
  readonly context: GatheredContext;
  readonly userContext: Readonly<Record<string, unknown>>;
}

export async function mcpFindings(input: McpStepInput): Promise<{ findings: Finding[]; usage: Usage; provider: 'llm_a' | 'llm_b'; summary: Record<string, unknown> }> {
  const servers = input.behaviour.execution.mcpServers ?? [];
  const provider = pickProvider(input.env, input.behaviour.execution.aiConfig?.provider, 'this agent');
  const fetch = new Fetcher(input.env).asFetch();
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const clients: Array<InstanceType<typeof Client>> = [];
  try {
    const tools: ToolRef[] = [];
    for (const [index, server] of servers.entries()) {
      const client = new Client({ name: 'plait-agent', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch, requestInit: { headers: authHeaders(server) } });
      try {
        await client.connect(transport);
      } catch (error) {
        throw new RunError('MCP_UNAVAILABLE', `MCP server ${server.name ?? server.url} could not be reached: ${(error as Error).message}`);
      }
      clients.push(client);
      const listed = await client.listTools();
      for (const tool of listed.tools) {
        if (server.tools !== undefined && !server.tools.includes(tool.name)) continue;
        tools.push({ server: index, name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema });
      }
    }
    // Step 1: the model chooses the calls.
    const plan = await complete(input.env, provider, {
      system: `You plan tool calls for a QA review agent. Answer with one JSON object: {"calls": [{"server": number, "tool": string, "arguments": object}]} with at most ${MAX_CALLS} calls, using only the tools listed.`,
      user: `# Instructions\n${input.behaviour.instructions ?? ''}\n\n# Page\n${input.context.url}\n\n# Tools\n${JSON.stringify(tools)}`,
      json: true,
    });
    const planned = jsonOf(plan.text, 'tool plan') as { calls?: unknown };
    if (!Array.isArray(planned.calls)) throw new RunError('MODEL_ANSWER_INVALID', 'the tool plan has no "calls" array');
    const results: Array<{ server: number; tool: string; result: unknown }> = [];
    for (const call of planned.calls.slice(0, MAX_CALLS) as Array<{ server?: unknown; tool?: unknown; arguments?: unknown }>) {
      const known = tools.find((t) => t.server === call.server && t.name === call.tool);
      if (known === undefined) throw new RunError('MODEL_ANSWER_INVALID', `the tool plan calls ${String(call.tool)} on server ${String(call.server)}, which is not offered`);
      const client = clients[known.server];
      if (client === undefined) continue;
      const result = await client.callTool({ name: known.name, arguments: (call.arguments ?? {}) as Record<string, unknown> });
      results.push({ server: known.server, tool: known.name, result: JSON.stringify(result.content ?? result).slice(0, RESULT_CAP) });
    }
    // Step 2: findings from the context plus what the tools answered.
    const withResults: GatheredContext = { ...input.context, parts: { ...input.context.parts, 'mcp-tool-results': results } };
    const ai = await aiFindings({ env: input.env, behaviour: input.behaviour, context: withResults, userContext: input.userContext });
    return {
      findings: ai.findings,
      provider: ai.provider,
      usage: { promptTokens: plan.usage.promptTokens + ai.usage.promptTokens, completionTokens: plan.usage.completionTokens + ai.usage.completionTokens },
      summary: { tools: tools.length, calls: results.map((r) => `${r.server}:${r.tool}`) },
    };
  } finally {
    await Promise.allSettled(clients.map((client) => client.close()));
  }
}
