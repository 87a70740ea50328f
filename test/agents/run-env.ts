// Test helper for agent runs: pages on loopback, a server allowed to reach them, running an agent to its end.
import type { Test } from 'tap';
import { dataOf, type DirectoryFixture } from '../helpers/directory.js';
import { pageServer, type PageServer } from '../helpers/pages.js';
import { startTestServer } from '../helpers/server.js';

export const scope = { organizationId: 'org-agents', documentId: 'doc-agents' };

export const PAGE = `<!doctype html><html lang="en"><head><title>Shop</title></head><body>
<h1>Our shop</h1>
<p>See <a href="/ok">our story</a> and <a href="/missing">Pricing</a>, or <a href="mailto:a@b.c">mail us</a> and <a href="#top">top</a>.</p>
<img src="/img/logo.png">
<img src="/img/gone.png" alt="Team">
<h3>Deep heading</h3>
</body></html>`;

export const OG_PAGE = `<!doctype html><html lang="en"><head><title>OG</title>
<meta property="og:title" content="Title"><meta property="og:description" content="Desc"><meta property="og:image" content="/img/missing-og.png">
</head><body><h1>OG</h1></body></html>`;

export interface Annotation {
  annotationId: string;
  type: string;
  targetElement?: { targetText?: string; occurrence?: number };
  context?: { agentId?: string; issueType?: string; executionId?: string };
  suggestion?: { status: string };
}

export async function setup(t: Test, overrides: Record<string, unknown> = {}): Promise<{ f: DirectoryFixture; pages: PageServer }> {
  const pages = await pageServer(t, {
    '/page': { body: PAGE },
    '/og-page': { body: OG_PAGE },
    '/ok': { body: '<p>ok</p>' },
    '/img/logo.png': { type: 'image/png', body: 'png' },
    '/slow': { body: PAGE },
  });
  const f = await directoryFixtureWith(t, { outboundAllowedNetworks: ['127.0.0.0/8'], agentPoolSize: 1, ...overrides });
  return { f, pages };
}

export async function directoryFixtureWith(t: Test, overrides: Record<string, unknown>): Promise<DirectoryFixture> {
  const server = await startTestServer(t, overrides);
  const credentials = await server.api.createWorkspace();
  return { ...server, credentials, call: (path, data) => server.api.call(credentials, path, data) };
}

export async function runToEnd(t: Test, f: DirectoryFixture, data: Record<string, unknown>): Promise<Record<string, unknown> & { status: string; error: { code: string; message: string } | null; results?: Array<Record<string, unknown>> }> {
  const { executionId } = dataOf(t, await f.call<{ executionId: string }>('/v2/agents/execution/run', { ...scope, ...data }));
  await f.server.services.agents.runs.finished(executionId);
  return dataOf(t, await f.call<{ execution: never }>('/v2/agents/execution/get', { executionId, includeResults: true })).execution;
}

export async function annotations(t: Test, f: DirectoryFixture): Promise<Annotation[]> {
  return dataOf(t, await f.call<Annotation[]>('/v2/commentannotations/get', scope));
}

