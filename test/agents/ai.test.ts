// Tests the ai strategies through the real openai and @anthropic-ai/sdk clients against fake model servers on loopback.
import t from 'tap';
import { dataOf } from '../helpers/directory.js';
import { fakeMessages, fakeOpenAi } from '../helpers/fake-llm.js';
import { annotations, directoryFixtureWith, runToEnd } from './run-env.js';
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

const FINDINGS = JSON.stringify({
  findings: [
    { title: 'Typo <b>teh</b>', description: 'Spelling', severity: 'low', issueType: 'typo', targetText: 'teh', occurrence: 1, suggestion: 'the' },
    { title: 'Typo teh', description: 'Duplicate of the first', severity: 'low', issueType: 'typo', targetText: 'teh', occurrence: 1, suggestion: 'the' },
  ],
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

t.test('ai through llm_a and llm_b: the request carries the instructions and the page text; the answer becomes deduplicated findings', async (t) => {
  const { pages, a, b, f } = await env(t);
  for (const [provider, server] of [['llm_a', a], ['llm_b', b]] as const) {
    server.answers = [FINDINGS];
    const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', agent(provider)));
    const run = await runToEnd(t, f, { agentId, url: `${pages.url}/plans` });
    t.equal(run.status, 'completed', `${provider}: ${JSON.stringify(run.error)}`);
    const sent = JSON.stringify(server.requests.at(-1));
    t.ok(sent.includes('Find spelling mistakes in the page text.'), `${provider} got the instructions`);
    t.ok(sent.includes('Our product is teh best value.'), `${provider} got the gathered page text`);
    t.equal(server.requests.at(-1)?.['model'], provider === 'llm_a' ? 'local-model' : 'messages-model');
    const sentHeaders = server.headers.at(-1) ?? {};
    const key = provider === 'llm_a' ? 'sk-test-a' : 'sk-test-b';
    t.ok(sentHeaders['authorization'] === `Bearer ${key}` || sentHeaders['x-api-key'] === key, `${provider} got its key the SDK's way`);
    t.same((run.results ?? []).map((r) => [r['title'], r['targetText'], r['suggestion']]), [['Typo teh', 'teh', 'the']], 'HTML stripped, duplicate dropped');
    t.match(run['summary'], { provider, promptTokens: provider === 'llm_a' ? 120 : 200 });
    const mine = (await annotations(t, f)).filter((x) => x.context?.agentId === agentId);
    t.match(mine, [{ type: 'suggestion', targetElement: { targetText: 'teh', occurrence: 1 }, suggestion: { status: 'pending' } }]);
  }
});

t.test('a malformed model answer fails the run cleanly and writes nothing', async (t) => {
  const { pages, a, f } = await env(t);
  const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', agent('llm_a')));
  for (const answer of ['this is not json', '{"findings": [{"title": "x", "severity": "catastrophic"}]}', '{"results": []}']) {
    a.answers = [answer];
    const run = await runToEnd(t, f, { agentId, url: `${pages.url}/plans` });
    t.match(run, { status: 'failed', error: { code: 'MODEL_ANSWER_INVALID' } }, answer);
  }
  t.same((await annotations(t, f)).filter((x) => x.context?.agentId === agentId), []);
});

