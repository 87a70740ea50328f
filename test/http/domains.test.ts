// Tests the domain operations and their effect: the sync upgrade and cross-origin REST follow the API key's domains.
import t from 'tap';
import WebSocket from 'ws';
import { normalizeDomain } from '../../src/tenant/domains.js';
import { apiKeyHeaders } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { editorOf, roomName, syncBase, userToken, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-d', documentId: 'doc-d', editorId: 'main' };

/** The HTTP status of an upgrade sent with this Origin header (101 when it opened). */
function upgradeWithOrigin(url: string, origin: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, origin === undefined ? {} : { origin });
    socket.on('open', () => {
      socket.terminate();
      resolve(101);
    });
    socket.on('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.on('error', reject);
  });
}

t.test('domains are stored normalised; add and delete report what they skipped; get lists them', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const empty = await api.call<{ domains: string[] }>(credentials, '/v2/workspace/domains/get', {});
  t.same(empty.body.result?.data.domains, [], 'a new key lists no domains');
  const added = await api.call<{ domains: string[]; skippedDomains: string[] }>(credentials, '/v2/workspace/domains/add', {
    domains: ['https://www.Example.com/app', '*.preview.example.org', 'localhost:3000'],
  });
  t.equal(added.status, 200);
  t.same(added.body.result?.data, { domains: ['example.com', '*.preview.example.org', 'localhost:3000'], skippedDomains: [] });
  const again = await api.call<{ domains: string[]; skippedDomains: string[] }>(credentials, '/v1/workspace/domains/add', { domains: ['example.com'] });
  t.same(again.body.result?.data.skippedDomains, ['example.com'], 'v1 alias; an existing domain is skipped, not duplicated');
  const removed = await api.call<{ domains: string[]; skippedDomains: string[] }>(credentials, '/v2/workspace/domains/delete', {
    domains: ['localhost:3000', 'absent.example'],
  });
  t.same(removed.body.result?.data, { domains: ['example.com', '*.preview.example.org'], skippedDomains: ['absent.example'] });
  const listed = await api.call<{ domains: string[] }>(credentials, '/v2/workspace/domains/get', {});
  t.same(listed.body.result?.data.domains, ['example.com', '*.preview.example.org']);

  const other = await api.createWorkspace();
  const otherList = await api.call<{ domains: string[] }>(other, '/v2/workspace/domains/get', {});
  t.same(otherList.body.result?.data.domains, [], "another workspace's key is unaffected");
});

t.test('bad domain input is INVALID_ARGUMENT naming the entry', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  for (const [domains, pattern] of [
    [['exa mple.com'], /data\.domains\[0\]/],
    [['ok.example', 'bad_host!'], /data\.domains\[1\]/],
    [['example.com:70000'], /port/],
    [[], /domains/],
    [Array.from({ length: 101 }, (_, i) => `d${i}.example`), /domains/],
  ] as const) {
    const answer = await api.call(credentials, '/v2/workspace/domains/add', { domains });
    t.equal(answer.status, 400, JSON.stringify(domains).slice(0, 40));
    t.equal(answer.body.error?.status, 'INVALID_ARGUMENT');
    t.match(answer.body.error?.message, pattern);
  }
  const unchanged = await api.call<{ domains: string[] }>(credentials, '/v2/workspace/domains/get', {});
  t.same(unchanged.body.result?.data.domains, [], 'a refused call adds nothing, not even its good entries');
});

t.test('normalizeDomain', async (t) => {
  t.equal(normalizeDomain('HTTP://WWW.Foo.Example:8080/x?y', 'f'), 'foo.example:8080');
  t.equal(normalizeDomain('*.Example.com', 'f'), '*.example.com');
  t.equal(normalizeDomain('example.com.', 'f'), 'example.com');
  t.throws(() => normalizeDomain('*', 'f'), /not a domain/);
  t.throws(() => normalizeDomain('a..b', 'f'), /not a domain/);
});

t.test('the sync upgrade follows the domains: other origins are refused 403, listed ones and non-browser clients open', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const socketUrl = `${syncBase(url)}/${roomName(room)}?token=${await userToken(api, credentials, [editorOf(room)])}`;
  t.equal(await upgradeWithOrigin(socketUrl, 'https://evil.example'), 101, 'no domains: any origin, as before');
  await api.call(credentials, '/v2/workspace/domains/add', { domains: ['app.example.com', '*.preview.example.org', 'localhost:3000'] });
  t.equal(await upgradeWithOrigin(socketUrl, 'https://evil.example'), 403, 'an unlisted origin');
  t.equal(await upgradeWithOrigin(socketUrl, 'https://app.example.com.evil.example'), 403, 'a look-alike suffix');
  t.equal(await upgradeWithOrigin(socketUrl, 'https://preview.example.org'), 403, 'a wildcard does not admit its apex');
  t.equal(await upgradeWithOrigin(socketUrl, 'http://localhost:3001'), 403, 'another port than the listed one');
  t.equal(await upgradeWithOrigin(socketUrl, 'null'), 403, 'an opaque origin');
  t.equal(await upgradeWithOrigin(socketUrl, 'https://app.example.com'), 101, 'a listed origin');
  t.equal(await upgradeWithOrigin(socketUrl, 'https://www.app.example.com'), 101, 'www. of a listed origin');
  t.equal(await upgradeWithOrigin(socketUrl, 'https://pr-7.preview.example.org'), 101, 'a subdomain under a wildcard');
  t.equal(await upgradeWithOrigin(socketUrl, 'http://localhost:3000'), 101, 'a listed host and port');
  t.equal(await upgradeWithOrigin(socketUrl, undefined), 101, 'a client that sends no Origin is not a page');
});

t.test('cross-origin REST follows the domains: refused 403, or answered with the origin echoed for CORS', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const other = await api.createWorkspace();
  await api.call(credentials, '/v2/workspace/domains/add', { domains: ['app.example.com'] });
  const from = (origin: string, who = credentials) =>
    api.post('/v2/workspace/domains/get', {}, { ...apiKeyHeaders(who), origin });
  const refused = await from('https://evil.example');
  t.equal(refused.status, 403);
  t.equal(refused.body.error?.status, 'PERMISSION_DENIED');
  t.match(refused.body.error?.message, /evil\.example/);
  const allowed = await from('https://app.example.com');
  t.equal(allowed.status, 200);
  t.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example.com');
  t.match(allowed.headers.get('vary') ?? '', /origin/i);
  const ownPage = await from(url);
  t.equal(ownPage.status, 200, "the server's own pages (the console) are not cross-origin");
  const otherKey = await from('https://evil.example', other);
  t.equal(otherKey.status, 200, 'a key without domains still answers any origin');
  t.equal(otherKey.headers.get('access-control-allow-origin'), '*');
});

t.test('allowedDomains at API key creation seed the domains; a bad one creates no key', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const workspaceHeaders = { 'x-svc-workspace-id': credentials.workspaceId, 'x-svc-workspace-auth-token': credentials.workspaceToken };
  const workspace = await api.post<{ owner: { email: string } }>('/v2/workspace/get', {}, workspaceHeaders);
  const ownerEmail = workspace.body.result?.data.owner.email ?? '';
  const bad = await api.post('/v2/workspace/apikey/create', { ownerEmail, type: 'testing', allowedDomains: ['not a domain'] }, workspaceHeaders);
  t.equal(bad.status, 400);
  t.match(bad.body.error?.message, /allowedDomains\[0\]/);
  const keys = await api.post<unknown[]>('/v2/workspace/apikeys/get', {}, workspaceHeaders);
  t.equal(keys.body.result?.data.length, 1, 'no key was created');
  const created = await api.post<{ apiKey: string }>('/v2/workspace/apikey/create', { ownerEmail, type: 'testing', allowedDomains: ['https://app.example.com'] }, workspaceHeaders);
  const apiKey = created.body.result?.data.apiKey ?? '';
  const tokens = await api.post<{ authTokens: Array<{ token: string }> }>('/v2/workspace/authtokens/get', { apiKey }, workspaceHeaders);
  const seeded = await api.call<{ domains: string[] }>(
    { ...credentials, apiKey, authToken: tokens.body.result?.data.authTokens[0]?.token ?? '' },
    '/v2/workspace/domains/get',
    {},
  );
  t.same(seeded.body.result?.data.domains, ['app.example.com']);
});

t.test('domains survive a restart', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  await first.api.call(credentials, '/v2/workspace/domains/add', { domains: ['kept.example'] });
  const second = await first.restart();
  const listed = await second.api.call<{ domains: string[] }>(credentials, '/v2/workspace/domains/get', {});
  t.same(listed.body.result?.data.domains, ['kept.example']);
});
