// Tests the browser strategies: Chromium through playwright-core when installed, FAILED_PRECONDITION when not.
import { existsSync } from 'node:fs';
import t from 'tap';
import { dataOf } from '../helpers/directory.js';
import { fakeOpenAi } from '../helpers/fake-llm.js';
import { pageServer } from '../helpers/pages.js';
import { directoryFixtureWith, runToEnd } from './run-env.js';

const CHROMIUM = '/usr/bin/chromium';
const PAGE = '<!doctype html><html lang="en"><head><title>Audit</title><link rel="stylesheet" href="/site.css"></head><body><h1>Hello</h1><img src="/a.png"></body></html>';

const agent = (strategies: string[]) => ({
  name: 'Visual', description: 'visual', enabled: true, instructions: 'Check the page looks right.',
  contextGathering: { strategies }, execution: {},
});

t.test('without Chromium a browser strategy fails its run with FAILED_PRECONDITION', async (t) => {
  const pages = await pageServer(t, { '/p': { body: PAGE } });
  const llm = await fakeOpenAi(t);
  const f = await directoryFixtureWith(t, { agentPoolSize: 1, outboundAllowedNetworks: ['127.0.0.0/8'], chromiumPath: '/nonexistent/chromium', llmABaseUrl: llm.baseUrl, llmAModel: 'm' });
  for (const strategies of [['web-page-screenshot'], ['computed-styles'], ['site-audit']]) {
    const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', agent(strategies)));
    const run = await runToEnd(t, f, { agentId, url: `${pages.url}/p` });
    t.match(run, { status: 'failed', error: { code: 'FAILED_PRECONDITION', message: /needs Chromium/ } }, strategies[0] ?? '');
  }
  t.equal(llm.requests.length, 0, 'the model was never asked');
});

t.test('with Chromium: screenshot, computed styles and site audit reach the model; every page request goes through the guarded client', { skip: existsSync(CHROMIUM) ? false : `Chromium is not installed at ${CHROMIUM}` }, async (t) => {
  const pages = await pageServer(t, { '/p': { body: PAGE }, '/site.css': { type: 'text/css', body: 'h1 { font-size: 40px; color: rgb(255, 0, 0); }' }, '/a.png': { status: 404 } });
  const llm = await fakeOpenAi(t);
  const f = await directoryFixtureWith(t, { agentPoolSize: 1, outboundAllowedNetworks: ['127.0.0.0/8'], chromiumPath: CHROMIUM, llmABaseUrl: llm.baseUrl, llmAModel: 'm', agentRunTimeoutMs: 90_000 });
  const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', agent(['web-page-screenshot', 'computed-styles', 'site-audit'])));
  const run = await runToEnd(t, f, { agentId, url: `${pages.url}/p` });
  t.equal(run.status, 'completed', JSON.stringify(run.error));
  const prompt = JSON.stringify(llm.requests[0]);
  t.match(prompt, /"format\\":\\"png\\"/, 'a PNG screenshot was taken');
  t.match(prompt, /fontSize\\":\\"40px/, 'computed styles include the stylesheet the page loaded');
  t.match(prompt, /imagesWithoutAlt\\":1/, 'the audit counted the image without alt');
  t.ok(pages.requests.includes('GET /site.css'), 'the stylesheet was fetched through the route handler');
});
