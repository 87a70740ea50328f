// Tests the rate limits as clients meet them: per client address, per target email, per API key; 429 with Retry-After; recovery.
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { ApiClient, apiKeyHeaders, workspaceHeaders } from '../helpers/api.js';
import { testConfig } from '../helpers/server.js';

async function start(t: Test, overrides: Partial<Config>): Promise<{ api: ApiClient; advance: (ms: number) => void; server: RunningServer }> {
  let time = Date.now();
  const config = testConfig(t.testdir(), overrides);
  // No SMTP_URL: account emails go to the dev log transport (silent here).
  const server = await startServer(config, createLogger('silent'), { clock: { now: () => time } });
  t.teardown(() => server.stop());
  return { api: new ApiClient(`http://127.0.0.1:${server.port}`), advance: (ms) => (time += ms), server };
}

const statusOf = (api: ApiClient, ownerEmail: string, headers: Record<string, string> = {}) =>
  api.post('/v2/workspace/email/status', { ownerEmail }, headers);

t.test('public operations: a burst past the per-address limit is 429 RESOURCE_EXHAUSTED with Retry-After, and recovers after the window', async (t) => {
  const { api, advance } = await start(t, { publicRateLimitPerMinute: 3, emailStatusRateLimitPerMinute: 0 });
  for (let i = 0; i < 3; i++) t.equal((await statusOf(api, `n${i}@example.com`)).status, 404, `request ${i + 1} is served`);
  const limited = await statusOf(api, 'n9@example.com');
  t.equal(limited.status, 429);
  t.equal(limited.body.error?.status, 'RESOURCE_EXHAUSTED');
  t.equal(limited.headers.get('retry-after'), '20', 'seconds until one request is allowed again');
  t.match(limited.body.error?.message, /client address/);
  const otherOperation = await api.post('/v2/workspace/email/send-login-link', { email: 'a@example.com', continueUrl: 'http://localhost/' });
  t.equal(otherOperation.status, 429, 'the address budget is shared by the public operations');
  const linkPost = await fetch(`${api.baseUrl}/email/verify`, { method: 'POST', body: new URLSearchParams({ token: 'x' }) });
  t.equal(linkPost.status, 429, 'the email link pages share the budget too');
  t.equal(linkPost.headers.get('retry-after'), '20');
  advance(60_000);
  t.equal((await statusOf(api, 'n9@example.com')).status, 404, 'served again after the window');
});

t.test('per target email: the sending operations and email/status are limited per address whatever the client', async (t) => {
  const { api, advance } = await start(t, { publicRateLimitPerMinute: 0, emailRateLimitPerHour: 2, emailStatusRateLimitPerMinute: 2 });
  const send = (email: string) => api.post('/v2/workspace/email/send-login-link', { email, continueUrl: 'http://localhost/' });
  t.equal((await send('target@example.com')).status, 200);
  t.equal((await send('TARGET@example.com')).status, 200, 'case does not make another address');
  const limited = await send('target@example.com');
  t.equal(limited.status, 429);
  t.match(limited.body.error?.message, /email address \(2 requests per hour\)/);
  t.equal(limited.headers.get('retry-after'), '1800');
  t.equal((await send('other@example.com')).status, 200, 'another address has its own budget');
  const create = await api.post('/v2/workspace/create', { ownerEmail: 'target@example.com' });
  t.equal(create.status, 429, 'Create Workspace sends mail to the address too and shares its budget');
  t.equal((await statusOf(api, 'target@example.com')).status, 404);
  t.equal((await statusOf(api, 'target@example.com')).status, 404);
  t.equal((await statusOf(api, 'target@example.com')).status, 429, 'email/status has its own per-address limit');
  advance(3_600_000);
  t.equal((await send('target@example.com')).status, 200, 'recovered after the hour');
});

t.test('authenticated operations: limited per API key and per workspace', async (t) => {
  const { api, advance } = await start(t, { apiKeyRateLimitPerMinute: 4 });
  const first = await api.createWorkspace('k1@example.com'); // one workspace-auth call (authtokens/get)
  const second = await api.createWorkspace('k2@example.com');
  const call = (credentials: typeof first) => api.post('/v2/workspace/apikeyconfig/get', {}, apiKeyHeaders(credentials));
  for (let i = 0; i < 4; i++) t.equal((await call(first)).status, 200, `key call ${i + 1}`);
  const limited = await call(first);
  t.equal(limited.status, 429);
  t.match(limited.body.error?.message, /API key \(4 requests per minute\)/);
  t.equal(limited.headers.get('retry-after'), '15');
  t.equal((await call(second)).status, 200, "another workspace's key is not affected");
  for (let i = 0; i < 3; i++) t.equal((await api.post('/v2/workspace/get', {}, workspaceHeaders(first))).status, 200);
  t.equal((await api.post('/v2/workspace/get', {}, workspaceHeaders(first))).status, 429, 'workspace-auth calls count per workspace');
  const badKey = await api.post('/v2/workspace/apikeyconfig/get', {}, { 'x-svc-api-key': first.apiKey, 'x-svc-auth-token': 'wrong' });
  t.equal(badKey.status, 403, 'credentials are checked first: a stranger cannot spend a key\'s budget');
  advance(60_000);
  t.equal((await call(first)).status, 200, 'recovered after the window');
});

t.test('X-Forwarded-For counts per client only behind a trusted proxy', async (t) => {
  const untrusted = await start(t, { publicRateLimitPerMinute: 1, emailStatusRateLimitPerMinute: 0 });
  t.equal((await statusOf(untrusted.api, 'a@example.com', { 'x-forwarded-for': '192.0.2.1' })).status, 404);
  t.equal((await statusOf(untrusted.api, 'a@example.com', { 'x-forwarded-for': '192.0.2.2' })).status, 429, 'a client cannot pick a fresh address');

  const trusted = await start(t, { publicRateLimitPerMinute: 1, emailStatusRateLimitPerMinute: 0, trustedProxies: ['127.0.0.1', '::1'] });
  t.equal((await statusOf(trusted.api, 'a@example.com', { 'x-forwarded-for': '192.0.2.1' })).status, 404);
  t.equal((await statusOf(trusted.api, 'a@example.com', { 'x-forwarded-for': '192.0.2.2' })).status, 404, 'each forwarded client has its own budget');
  t.equal((await statusOf(trusted.api, 'a@example.com', { 'x-forwarded-for': '192.0.2.1' })).status, 429, 'and it is spent');
  t.equal((await statusOf(trusted.api, 'a@example.com', { 'x-forwarded-for': '6.6.6.6, 192.0.2.1' })).status, 429, 'a spoofed leftmost entry does not help');
});
