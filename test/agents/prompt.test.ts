// Tests prompt validation and ask-ai, with and without a provider, and a run that needs a provider none is configured for.
import t from 'tap';
import { dataOf, expectError } from '../helpers/directory.js';
import { fakeMessages, fakeOpenAi } from '../helpers/fake-llm.js';
import { directoryFixtureWith, runToEnd } from './run-env.js';
import { pageServer } from '../helpers/pages.js';

const PAGE = '<!doctype html><html lang="en"><head><title>Plans</title></head><body><h1>Plans</h1><p>Our product is teh best value.</p><p>Buy now.</p></body></html>';

const agent = (provider: 'llm_a' | 'llm_b') => ({
  name: 'Typos',
  description: 'Finds typos',
  enabled: true,
  instructions: 'Find spelling mistakes in the page text.',
  contextGathering: { strategies: ['web-page-text'] },
  execution: { aiConfig: { provider } },
});


async function env(t: Parameters<typeof fakeOpenAi>[0]) {
  const pages = await pageServer(t, { '/plans': { body: PAGE } });
  const a = await fakeOpenAi(t);
  const b = await fakeMessages(t);
  const f = await directoryFixtureWith(t, {
    outboundAllowedNetworks: ['127.0.0.0/8'],
    agentPoolSize: 1,
    llmABaseUrl: a.baseUrl, llmAModel: 'local-model', llmAApiKey: 'sk-test-a',
    llmBBaseUrl: b.baseUrl, llmBModel: 'messages-model', llmBApiKey: 'sk-test-b',
  });
  return { pages, a, b, f };
}

t.test('a run that needs a provider none is configured for fails with a clear error', async (t) => {
  const pages = await pageServer(t, { '/plans': { body: PAGE } });
  const f = await directoryFixtureWith(t, { outboundAllowedNetworks: ['127.0.0.0/8'], agentPoolSize: 1 });
  const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', { ...agent('llm_a'), execution: {} }));
  const run = await runToEnd(t, f, { agentId, url: `${pages.url}/plans` });
  t.match(run, { status: 'failed', error: { code: 'FAILED_PRECONDITION', message: /none is configured/ } });

  // Prompt validation without a provider: the built-in expander answers a valid, useful result.
  const res = dataOf(t, await f.call<{ validationResult: Record<string, unknown>; source: string }>('/v2/agents/prompt/validate', { prompt: 'Flag headlines longer than {maxWords} words', userContextFields: [{ id: 'brand', title: 'Brand', type: 'string' }] }));
  t.equal(res.source, 'built-in');
  t.match(res.validationResult, { requires_tool: 'TOOL_TEXT_EXTRACTOR', analysis_prompt: /## Objective[\s\S]*## Scope[\s\S]*## Detection logic[\s\S]*## Output format/, suggested_required_inputs: [{ id: 'maxWords' }] });
  t.same(Object.keys(res.validationResult['response_descriptions'] as object).sort(), ['issueType', 'severity', 'suggestion', 'targetText', 'title']);
  const visual = dataOf(t, await f.call<{ validationResult: { requires_tool: string } }>('/v2/agents/prompt/validate', { prompt: 'Check the colour contrast of buttons' }));
  t.equal(visual.validationResult.requires_tool, 'NONE');
  expectError(t, await f.call('/v2/agents/prompt/validate', { prompt: '' }), 'INVALID_ARGUMENT', /data\.prompt must not be empty/);
  expectError(t, await f.call('/v2/agents/prompt/validate', { prompt: 'x', provider: 'llm_b' }), 'FAILED_PRECONDITION', /llm_b, which is not configured/);
  expectError(t, await f.call('/v2/rewriter/ask-ai', { prompt: 'Shorter', text: 'A long text' }), 'FAILED_PRECONDITION', /none is configured/);
});

t.test('prompt validation and ask-ai through a provider; a schema-breaking validation answer is refused', async (t) => {
  const { a, b, f } = await env(t);
  const valid = { analysis_prompt: '## Objective\nx', requires_tool: 'NONE', response_descriptions: { title: 't' }, demos: { detection_dimensions: ['d'], cases: [] }, suggested_required_inputs: [] };
  a.answers = [JSON.stringify(valid)];
  const res = dataOf(t, await f.call<{ validationResult: unknown; source: string }>('/v2/agents/prompt/validate', { prompt: 'Check tone', provider: 'llm_a' }));
  t.same(res, { validationResult: valid, source: 'llm_a' });
  a.answers = ['{"analysis_prompt": 3}'];
  expectError(t, await f.call('/v2/agents/prompt/validate', { prompt: 'Check tone', provider: 'llm_a' }), 'UNAVAILABLE', /not a valid PromptValidatorResult/);
  b.answers = ['A short text.'];
  const rewritten = dataOf(t, await f.call<{ text: string; provider: string; model: string }>('/v2/rewriter/ask-ai', { prompt: 'Make it shorter', text: 'A rather long and winding text.', provider: 'llm_b', model: 'other-model' }));
  t.same([rewritten.text, rewritten.provider, rewritten.model], ['A short text.', 'llm_b', 'other-model']);
  t.ok(JSON.stringify(b.requests.at(-1)).includes('A rather long and winding text.'));
});
