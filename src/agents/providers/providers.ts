// Owns the model providers: `llm_a` (OpenAI-compatible chat completions, via `openai`) and `llm_b` (Anthropic-style messages, via `@anthropic-ai/sdk`).
import { Fetcher } from '../gather/fetcher.js';
import type { ProviderId } from '../model.js';
import { RunError, type ProviderConfig, type Usage, type WorkerEnv } from '../tasks.js';

export interface Completion {
  readonly text: string;
  readonly usage: Usage;
  readonly provider: ProviderId;
  readonly model: string;
}

export interface CompletionRequest {
  readonly system: string;
  readonly user: string;
  /** Ask for a JSON object answer (llm_a: response_format json_object; llm_b: said in the system prompt). */
  readonly json: boolean;
  readonly maxTokens?: number;
  readonly model?: string;
}

/** The provider a task asked for, else the first configured (llm_a before llm_b); none configured fails clearly. */
export function pickProvider(env: WorkerEnv, wanted: ProviderId | undefined, what: string): ProviderConfig {
  if (wanted !== undefined) {
    const found = env.providers.find((p) => p.id === wanted);
    if (found === undefined) throw new RunError('FAILED_PRECONDITION', `${what} asks for provider ${wanted}, which is not configured (set ${wanted.toUpperCase()}_BASE_URL and ${wanted.toUpperCase()}_MODEL)`);
    return found;
  }
  const first = env.providers[0];
  if (first === undefined) throw new RunError('FAILED_PRECONDITION', `${what} needs a model provider and none is configured (set LLM_A_BASE_URL/LLM_A_MODEL or LLM_B_BASE_URL/LLM_B_MODEL)`);
  return first;
}

/** Every SDK request goes through OutboundHttp (the SSRF guard and its allow-list), never the SDK's own fetch. */
export async function complete(env: WorkerEnv, provider: ProviderConfig, request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
  const fetch = new Fetcher(env).asFetch();
  const model = request.model ?? provider.model;
  const maxTokens = request.maxTokens ?? 4096;
  try {
    // The SDKs load on first use: a worker that runs only service agents never pays for them.
    if (provider.id === 'llm_a') {
      const { default: OpenAI } = await import('openai');
      const client = new OpenAI({ baseURL: provider.baseUrl, apiKey: provider.apiKey, fetch, maxRetries: 1, timeout: 120_000 });
      const answer = await client.chat.completions.create(
        {
          model,
          max_tokens: maxTokens,
          messages: [
            { role: 'system', content: request.system },
            { role: 'user', content: request.user },
          ],
          ...(request.json ? { response_format: { type: 'json_object' as const } } : {}),
        },
        signal === undefined ? {} : { signal },
      );
      const text = answer.choices[0]?.message.content;
      if (typeof text !== 'string') throw new RunError('MODEL_ANSWER_INVALID', 'llm_a answered without message content');
      return { text, usage: { promptTokens: answer.usage?.prompt_tokens ?? 0, completionTokens: answer.usage?.completion_tokens ?? 0 }, provider: 'llm_a', model };
    }
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic({ baseURL: provider.baseUrl, apiKey: provider.apiKey, fetch, maxRetries: 1, timeout: 120_000 });
    const answer = await client.messages.create(
      { model, max_tokens: maxTokens, system: request.system, messages: [{ role: 'user', content: request.user }] },
      signal === undefined ? {} : { signal },
    );
    const text = answer.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
    if (text === '') throw new RunError('MODEL_ANSWER_INVALID', 'llm_b answered without text content');
    return { text, usage: { promptTokens: answer.usage.input_tokens, completionTokens: answer.usage.output_tokens }, provider: 'llm_b', model };
  } catch (error) {
    if (error instanceof RunError) throw error;
    // SDK errors carry the HTTP status; their messages never include the key.
    const status = (error as { status?: number }).status;
    throw new RunError('PROVIDER_ERROR', `${provider.id} request failed${status === undefined ? '' : ` (HTTP ${status})`}: ${(error as Error).message}`);
  }
}

/** The JSON object inside a model answer: bare, or in a ```json fence. */
export function jsonOf(text: string, what: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const body = (fenced?.[1] ?? text).trim();
  try {
    return JSON.parse(body);
  } catch (error) {
    throw new RunError('MODEL_ANSWER_INVALID', `${what}: the model's answer is not JSON (${(error as Error).message})`);
  }
}
