// Owns the agent execution operations (upstream notes 1.10), Validate Prompt (spec 4.8) and Ask AI (upstream 1.9): pool work behind REST.
import type { AgentServices } from '../../agents/services.js';
import type { ExecutionStatus, RunInput } from '../../agents/runs.js';
import type { ProviderId } from '../../agents/model.js';
import { RunError, type Usage } from '../../agents/tasks.js';
import type { PromptValidatorResult } from '../../agents/providers/prompt-validator.js';
import { AppError, failedPrecondition } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import {
  askAiSchema,
  cancelExecutionSchema,
  countExecutionsSchema,
  getExecutionSchema,
  listExecutionsSchema,
  runAgentSchema,
  validatePromptSchema,
} from '../schemas/agents.js';

/** Failures of what the pool depends on (the model provider, the worker, the pool itself): the caller may retry. */
const UPSTREAM = new Set(['PROVIDER_ERROR', 'MODEL_ANSWER_INVALID', 'TIMEOUT', 'WORKER_CRASHED', 'UNAVAILABLE']);

/**
 * A pool task's failure as the error envelope: a missing provider or browser is a precondition; upstream trouble (a
 * provider that failed, or answered what the schema refuses: models answer differently when asked again) and a
 * stopping pool are UNAVAILABLE, not INTERNAL, which is for Plait's own bugs and storage (docs/errors.md).
 */
export function poolError(error: unknown): unknown {
  if (!(error instanceof RunError)) return error;
  if (error.code === 'FAILED_PRECONDITION') return failedPrecondition(error.message);
  if (UPSTREAM.has(error.code)) return new AppError('UNAVAILABLE', error.message);
  return new AppError('INTERNAL', error.message);
}

export async function inPool<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw poolError(error);
  }
}

export function agentRunOperations(agents: AgentServices): Operation[] {
  return [
    operation<RunInput, 'apiKey'>({
      paths: ['/v2/agents/execution/run'],
      auth: 'apiKey',
      schema: runAgentSchema,
      handle: async (input, ctx) => ok('Agent execution started.', await agents.runs.start(ctx.identity.apiKey, input)),
    }),
    operation<{ executionId: string; includeResults?: boolean }, 'apiKey'>({
      paths: ['/v2/agents/execution/get'],
      auth: 'apiKey',
      schema: getExecutionSchema,
      handle: (input, ctx) => ok('Agent execution fetched successfully.', { execution: agents.runs.get(ctx.identity.apiKey, input.executionId, input.includeResults === true) }),
    }),
    operation<{ pageSize?: number; pageToken?: string; agentId?: string; status?: ExecutionStatus }, 'apiKey'>({
      paths: ['/v2/agents/execution/list'],
      auth: 'apiKey',
      schema: listExecutionsSchema,
      handle: (input, ctx) => {
        const page = agents.runs.list(ctx.identity.apiKey, { ...input, pageSize: input.pageSize ?? 50 });
        return ok('Agent executions fetched successfully.', { executions: page.executions }, page.pageToken === undefined ? undefined : { pageToken: page.pageToken });
      },
    }),
    operation<{ agentId?: string }, 'apiKey'>({
      paths: ['/v2/agents/execution/count'],
      auth: 'apiKey',
      schema: countExecutionsSchema,
      handle: (input, ctx) => ok('Agent execution count fetched successfully.', agents.runs.count(ctx.identity.apiKey, input.agentId)),
    }),
    operation<{ executionId: string }, 'apiKey'>({
      paths: ['/v2/agents/execution/cancel'],
      auth: 'apiKey',
      schema: cancelExecutionSchema,
      handle: async (input, ctx) => ok('Agent execution cancelled.', { execution: await agents.runs.cancel(ctx.identity.apiKey, input.executionId) }),
    }),
    operation<{ prompt: string; provider?: ProviderId; userContextFields?: Array<Record<string, unknown>> }, 'apiKey'>({
      paths: ['/v2/agents/prompt/validate'],
      auth: 'apiKey',
      schema: validatePromptSchema,
      handle: async (input, ctx) => {
        const result = await inPool(() =>
          agents.pool.run<{ validationResult: PromptValidatorResult; source: string }>(ctx.identity.apiKey, {
            kind: 'validate-prompt',
            env: agents.env,
            prompt: input.prompt,
            userContextFields: input.userContextFields ?? [],
            ...(input.provider === undefined ? {} : { provider: input.provider }),
          }),
        );
        return ok('Prompt validated successfully.', { validationResult: result.validationResult, source: result.source });
      },
    }),
    operation<{ prompt: string; text: string; model?: string; provider?: ProviderId }, 'apiKey'>({
      paths: ['/v2/rewriter/ask-ai'],
      auth: 'apiKey',
      schema: askAiSchema,
      handle: async (input, ctx) => {
        const answer = await inPool(() =>
          agents.pool.run<{ text: string; usage: Usage; provider: ProviderId; model: string }>(ctx.identity.apiKey, {
            kind: 'ask-ai',
            env: agents.env,
            prompt: input.prompt,
            text: input.text,
            ...(input.model === undefined ? {} : { model: input.model }),
            ...(input.provider === undefined ? {} : { provider: input.provider }),
          }),
        );
        return ok('AI response generated successfully.', answer);
      },
    }),
  ];
}
