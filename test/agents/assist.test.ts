// Tests the authoring helpers (config/resolve, prompt/enhance, prompt/refine, extract) offline and through a provider, and analytics.
import t from 'tap';
import { dataOf, expectError } from '../helpers/directory.js';
import { fakeOpenAi } from '../helpers/fake-llm.js';
import { directoryFixtureWith } from './run-env.js';

t.test('offline: rules resolve strategies, judge and refine prompts, and extract drafts that Create Agent accepts', async (t) => {
  const f = await directoryFixtureWith(t, { agentPoolSize: 1 });
  t.match(dataOf(t, await f.call('/v2/agents/config/resolve', { instructions: 'Find broken links on the page' })), { source: 'built-in', contextGathering: { strategies: ['web-page-links'] }, execution: { executionStrategy: 'service', serviceId: 'broken-links' } });
  t.match(dataOf(t, await f.call('/v2/agents/config/resolve', { instructions: 'Is the tone friendly?' })), { execution: { executionStrategy: 'ai' }, contextGathering: { strategies: ['web-page-text'] } });
  const vague = dataOf(t, await f.call<{ isSpecific: boolean; clarifyingQuestions: string[] }>('/v2/agents/prompt/enhance', { prompt: 'make it better' }));
  t.equal(vague.isSpecific, false);
  t.ok(vague.clarifyingQuestions.length >= 2);
  t.match(dataOf(t, await f.call('/v2/agents/prompt/enhance', { prompt: 'Headings must be shorter than 8 words on every product page' })), { isSpecific: true, score: 100 });
  const refined = dataOf(t, await f.call<{ refinedPrompt: string; changes: string[] }>('/v2/agents/prompt/refine', { prompt: 'Flag jargon.', feedback: [{ targetText: 'API', verdict: 'incorrect', comment: 'our users know it' }, { targetText: 'idempotent', verdict: 'missed' }] }));
  t.match(refined.refinedPrompt, /Do not report "API" \(our users know it\)[\s\S]*Also report cases like "idempotent"/);
  const { agents } = dataOf(t, await f.call<{ agents: Array<Record<string, unknown>> }>('/v2/agents/extract', { content: '# Launch checklist\n- Check that no link is broken\n- Every image needs alt text\n1. Headlines must not use jargon', fileName: 'checklist.md' }));
  t.equal(agents.length, 3);
  for (const draft of agents) dataOf(t, await f.call('/v2/agents/create', draft));
  expectError(t, await f.call('/v2/agents/prompt/refine', { prompt: 'x', feedback: [] }), 'INVALID_ARGUMENT', /data\.feedback must have at least 1/);
  const analytics = dataOf(t, await f.call<{ totals: { executionCount: number }; agents: unknown[] }>('/v2/agents/analytics/get', {}));
  t.equal(analytics.totals.executionCount, 0);
  t.ok(analytics.agents.length >= 7, 'built-ins and the three drafts');
});

t.test('through a provider: the model answers, and an answer of the wrong shape is refused', async (t) => {
  const a = await fakeOpenAi(t);
  const f = await directoryFixtureWith(t, { agentPoolSize: 1, outboundAllowedNetworks: ['127.0.0.0/8'], llmABaseUrl: a.baseUrl, llmAModel: 'm' });
  a.answers = [JSON.stringify({ contextGathering: { strategies: ['web-page-css'] }, execution: { executionStrategy: 'ai' }, reason: 'styles' })];
  t.match(dataOf(t, await f.call('/v2/agents/config/resolve', { instructions: 'Fonts must be consistent' })), { source: 'llm_a', contextGathering: { strategies: ['web-page-css'] } });
  t.ok(JSON.stringify(a.requests.at(-1)).includes('Fonts must be consistent'));
  a.answers = [JSON.stringify({ contextGathering: { strategies: ['telepathy'] }, execution: { executionStrategy: 'ai' } })];
  expectError(t, await f.call('/v2/agents/config/resolve', { instructions: 'x' }), 'UNAVAILABLE', /resolve answer is invalid/);
});
