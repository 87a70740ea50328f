// Owns the agent authoring helpers (upstream notes 1.10): config/resolve, prompt/enhance, prompt/refine, extract, and analytics/get.
import type { ProviderId } from '../../agents/model.js';
import type { AgentServices } from '../../agents/services.js';
import type { AssistTask, Usage } from '../../agents/tasks.js';
import { ok, operation, type Operation } from '../operation.js';
import { analyticsSchema, enhancePromptSchema, extractSchema, refinePromptSchema, resolveConfigSchema } from '../schemas/agents.js';
import { inPool } from './agent-runs.js';

type Input = Record<string, unknown> & { provider?: ProviderId };

export function agentAssistOperations(agents: AgentServices): Operation[] {
  const assist = (op: AssistTask['op'], path: string, schema: object, message: string): Operation =>
    operation<Input, 'apiKey'>({
      paths: [path],
      auth: 'apiKey',
      schema,
      handle: async (input, ctx) => {
        const { provider, ...rest } = input;
        const answer = await inPool(() => agents.pool.run<{ result: Record<string, unknown>; usage: Usage; source: string }>(ctx.identity.apiKey, { kind: 'assist', env: agents.env, op, input: rest, ...(provider === undefined ? {} : { provider }) }));
        return ok(message, { ...answer.result, source: answer.source });
      },
    });
  return [
    assist('resolve', '/v2/agents/config/resolve', resolveConfigSchema, 'Agent config resolved successfully.'),
    assist('enhance', '/v2/agents/prompt/enhance', enhancePromptSchema, 'Prompt checked successfully.'),
    assist('refine', '/v2/agents/prompt/refine', refinePromptSchema, 'Prompt refined successfully.'),
    assist('extract', '/v2/agents/extract', extractSchema, 'Agents extracted successfully.'),
    operation<{ agentId?: string }, 'apiKey'>({
      paths: ['/v2/agents/analytics/get'],
      auth: 'apiKey',
      schema: analyticsSchema,
      handle: (input, ctx) => {
        const apiKey = ctx.identity.apiKey;
        const rows = agents.definitions.list(apiKey, undefined).filter((row) => input.agentId === undefined || row.id === input.agentId);
        const perAgent = rows.map((row) => ({ agentId: row.id, name: row.name, ...agents.definitions.statsOf(apiKey, row.id) }));
        const counts = agents.runs.count(apiKey, input.agentId);
        const totals = perAgent.reduce((sum, a) => ({ executionCount: sum.executionCount + a.executionCount, promptTokens: sum.promptTokens + a.promptTokens, completionTokens: sum.completionTokens + a.completionTokens }), { executionCount: 0, promptTokens: 0, completionTokens: 0 });
        return ok('Agent analytics fetched successfully.', { totals: { ...totals, totalTokens: totals.promptTokens + totals.completionTokens }, executionsByStatus: counts.byStatus, agents: perAgent });
      },
    }),
  ];
}
