// Tests agent runs end to end: built-in agents against pages on loopback write suggestion annotations a sync client sees live.
import t from 'tap';
import { dataOf, expectError } from '../helpers/directory.js';
import { annotations, runToEnd, scope, setup } from './run-env.js';

// One server and page set for the whole file: every server boots its own worker threads, which is the slow part.
let shared: ReturnType<typeof setup> | undefined;
const env = (): ReturnType<typeof setup> => (shared ??= setup(t));

t.test('broken-links finds the 404 link and the 404 image; a second run replaces the suggestions', async (t) => {
  const { f, pages } = await env();
  const run = await runToEnd(t, f, { agentId: 'broken-links', url: `${pages.url}/page` });
  t.equal(run.status, 'completed', JSON.stringify(run.error));
  const found = (run.results ?? []).map((r) => [r['issueType'], r['targetText']]);
  t.same(found.sort(), [['broken-image', 'Team'], ['broken-link', 'Pricing']]);
  const first = (await annotations(t, f)).filter((a) => a.context?.agentId === 'broken-links');
  t.equal(first.length, 2);
  t.ok(first.every((a) => a.type === 'suggestion' && a.suggestion?.status === 'pending'));
  t.ok(first.some((a) => a.targetElement?.targetText === 'Pricing' && a.targetElement.occurrence === 1));

  const again = await runToEnd(t, f, { agentId: 'broken-links', url: `${pages.url}/page` });
  t.match(again['summary'], { annotationsCreated: 2, annotationsDeleted: 2 });
  const second = (await annotations(t, f)).filter((a) => a.context?.agentId === 'broken-links');
  t.equal(second.length, 2, 'deletePreviousSuggestions replaced, not added');
  t.notOk(second.some((a) => first.some((b) => b.annotationId === a.annotationId)));
  t.notOk(pages.requests.some((r) => r.includes('mailto') || r.endsWith('#top')), 'mailto and fragment links are not fetched');
});

t.test('alt text and headings: the image without alt and the skipped heading level', async (t) => {
  const { f, pages } = await env();
  const run = await runToEnd(t, f, { agentId: 'alt-text-and-headings', url: `${pages.url}/page` });
  t.equal(run.status, 'completed');
  const types = (run.results ?? []).map((r) => r['issueType']).sort();
  t.same(types, ['missing-alt-text', 'skipped-heading-level']);
  const skipped = (run.results ?? []).find((r) => r['issueType'] === 'skipped-heading-level');
  t.equal(skipped?.['targetText'], 'Deep heading');
});

t.test('open graph: missing tags on one page, a broken og:image on another', async (t) => {
  const { f, pages } = await env();
  const missing = await runToEnd(t, f, { agentId: 'open-graph-tags', url: `${pages.url}/page` });
  t.same((missing.results ?? []).map((r) => (r['detail'] as { tag: string }).tag).sort(), ['og:description', 'og:image', 'og:title']);
  const broken = await runToEnd(t, f, { agentId: 'open-graph-tags', url: `${pages.url}/og-page` });
  t.same((broken.results ?? []).map((r) => r['issueType']), ['broken-og-image']);
});

t.test('a custom service agent with postProcess.deletePreviousSuggestions off keeps earlier suggestions', async (t) => {
  const { f, pages } = await env();
  const { agentId } = dataOf(t, await f.call<{ agentId: string }>('/v2/agents/create', {
    name: 'Links', description: 'links', enabled: true,
    contextGathering: { strategies: ['web-page-links'] },
    execution: { executionStrategy: 'service', serviceId: 'broken-links' },
    postProcess: { deletePreviousSuggestions: { enabled: false }, annotations: { strategy: 'page-level' } },
  }));
  await runToEnd(t, f, { agentId, url: `${pages.url}/page` });
  await runToEnd(t, f, { agentId, url: `${pages.url}/page` });
  const mine = (await annotations(t, f)).filter((a) => a.context?.agentId === agentId);
  t.equal(mine.length, 2, 'one page-level annotation per run, none deleted');
  t.ok(mine.every((a) => a.targetElement === undefined));
});

t.test('execution get, list newest first with paging, count; unknown execution is NOT_FOUND', async (t) => {
  const { f, pages } = await setup(t);
  const a = await runToEnd(t, f, { agentId: 'readability', url: `${pages.url}/page` });
  const b = await runToEnd(t, f, { agentId: 'broken-links', url: `${pages.url}/page` });
  const page1 = await f.call<{ executions: Array<{ executionId: string }> }>('/v2/agents/execution/list', { pageSize: 1 });
  t.same(dataOf(t, page1).executions.map((e) => e.executionId), [b['executionId']]);
  const token = page1.body.result?.['pageToken'] as string;
  const page2 = dataOf(t, await f.call<{ executions: Array<{ executionId: string; results?: unknown }> }>('/v2/agents/execution/list', { pageSize: 1, pageToken: token }));
  t.same(page2.executions.map((e) => e.executionId), [a['executionId']]);
  t.equal(page2.executions[0]?.results, undefined, 'list rows carry no results');
  t.match(dataOf(t, await f.call('/v2/agents/execution/count', {})), { total: 2, byStatus: { completed: 2 }, byAgent: { readability: 1, 'broken-links': 1 } });
  const withoutResults = dataOf(t, await f.call<{ execution: Record<string, unknown> }>('/v2/agents/execution/get', { executionId: a['executionId'] })).execution;
  t.notOk('results' in withoutResults);
  const rows = dataOf(t, await f.call<{ agents: Array<{ id: string; executionCount: number; lastExecutedAt: number | null }> }>('/v2/agents/get', { filter: 'defaultOnly' })).agents;
  t.match(rows.find((r) => r.id === 'broken-links'), { executionCount: 1 });
  t.ok(typeof rows.find((r) => r.id === 'broken-links')?.lastExecutedAt === 'number');
  expectError(t, await f.call('/v2/agents/execution/get', { executionId: 'nope' }), 'NOT_FOUND', /execution nope not found/);
  expectError(t, await f.call('/v2/agents/execution/run', { ...scope, agentId: 'ghost', url: `${pages.url}/page` }), 'NOT_FOUND', /agent ghost/);
  expectError(t, await f.call('/v2/agents/execution/run', { ...scope, agentId: 'broken-links', url: 'ftp://x' }), 'INVALID_ARGUMENT', /data\.url/);
});


t.test('a connected sync client sees the agent suggestions arrive live', async (t) => {
  const { f, pages } = await setup(t);
  const decoding = await import('lib0/decoding');
  const { default: WebSocket } = await import('ws');
  const { WebsocketProvider } = await import('y-websocket');
  const Y = await import('yjs');
  const { LIVE_MESSAGE_TYPE } = await import('../../src/ws/live-messages.js');
  const token = dataOf(t, await f.call<{ token: string }>('/v2/auth/generate_token', { userId: 'reviewer', userProperties: { name: 'R', email: 'r@example.com' }, permissions: { resources: [{ type: 'organization', id: scope.organizationId }] } })).token;
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(`${f.url.replace(/^http/, 'ws')}/sync/${scope.organizationId}/doc-live`, 'main', doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: { token, ext: '1' },
  });
  t.teardown(() => {
    provider.destroy();
    doc.destroy();
  });
  const live = new Promise<Array<{ op: string; annotation?: { context?: { agentId?: string }; targetElement?: { targetText?: string } } }>>((resolve) => {
    provider.messageHandlers[LIVE_MESSAGE_TYPE] = (_encoder, decoder) => {
      const message = JSON.parse(decoding.readVarString(decoder)) as { snapshot: boolean; annotations: Array<{ op: string; annotation?: { context?: { agentId?: string } } }> };
      if (!message.snapshot && message.annotations.some((c) => c.annotation?.context?.agentId === 'broken-links')) resolve(message.annotations);
    };
  });
  await new Promise<void>((resolve) => (provider.synced ? resolve() : provider.once('sync', () => resolve())));
  await runToEnd(t, f, { agentId: 'broken-links', url: `${pages.url}/page`, documentId: 'doc-live' });
  const changes = await live;
  t.same(changes.map((c) => c.annotation?.targetElement?.targetText).sort(), ['Pricing', 'Team']);
});
