import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { apiKeyHeaders, workspaceHeaders, type Credentials } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';

const tokenData = { userId: 'u1', userProperties: { name: 'Ada', email: 'ada@example.com' }, permissions: { resources: [] } };

t.test('workspace flow: create, list tokens, use the key, reset, old token rejected', async (t) => {
  const { api } = await startTestServer(t);
  const created = await api.post<{ id: string; name: string; owner: { email: string; name: string }; authToken: string; apiKeyList: Record<string, { apiKeyName: string; id: string; type: string }> }>(
    '/v2/workspace/create',
    { ownerEmail: 'owner@example.com', name: 'Owner' },
  );
  t.equal(created.status, 200);
  const workspace = created.body.result?.data;
  if (workspace === undefined) throw new Error('no workspace');
  t.equal(workspace.owner.email, 'owner@example.com');
  t.equal(workspace.name, 'Owner workspace');
  const [apiKey, keyInfo] = Object.entries(workspace.apiKeyList)[0] ?? [];
  t.same(keyInfo, { apiKeyName: 'Owner Test API Key', id: apiKey, type: 'testing' });
  if (apiKey === undefined) throw new Error('no key');

  const wsHeaders = { 'x-svc-workspace-id': workspace.id, 'x-svc-workspace-auth-token': workspace.authToken };
  const got = await api.post('/v2/workspace/get', {}, wsHeaders);
  t.same(got.body.result?.data, workspace, 'get answers the same shape as create');

  const tokens = await api.post<{ apiKey: string; authTokens: Array<{ token: string; name: string; domains: string[] }> }>('/v2/workspace/authtokens/get', { apiKey }, wsHeaders);
  const first = tokens.body.result?.data.authTokens[0];
  t.equal(tokens.body.result?.data.authTokens.length, 1);
  t.equal(first?.name, 'Default Auth Token');
  if (first === undefined) throw new Error('no token');
  const credentials: Credentials = { workspaceId: workspace.id, workspaceToken: workspace.authToken, apiKey, authToken: first.token };

  const minted = await api.call<{ token: string }>(credentials, '/v2/auth/generate_token', tokenData);
  t.equal(minted.status, 200);
  t.match(minted.body.result?.data.token, /^ey[\w-]+\.[\w-]+\.[\w-]+$/);

  const reset = await api.post<{ apiKey: string; newAuthToken: { token: string; name: string; domains: string[] } }>('/v2/workspace/authtoken/reset', { apiKey }, wsHeaders);
  t.equal(reset.status, 200);
  const fresh = reset.body.result?.data.newAuthToken.token;
  t.not(fresh, first.token);
  const old = await api.call(credentials, '/v2/auth/generate_token', tokenData);
  t.equal(old.status, 403, 'the old token stops working at once');
  t.equal(old.body.error?.status, 'PERMISSION_DENIED');
  const renewed = await api.call({ ...credentials, authToken: fresh ?? '' }, '/v2/auth/generate_token', tokenData);
  t.equal(renewed.status, 200);
  const listed = await api.post<{ authTokens: Array<{ token: string }> }>('/v2/workspace/authtokens/get', { apiKey }, wsHeaders);
  t.same(listed.body.result?.data.authTokens.map((x) => x.token), [fresh], 'the token list shows the new token only');

  const unknownReset = await api.post('/v2/workspace/authtoken/reset', { apiKey: 'nope' }, wsHeaders);
  t.equal(unknownReset.status, 404);
  t.equal(unknownReset.body.error?.status, 'NOT_FOUND');
});

t.test('a second workspace for the same email is ALREADY_EXISTS; a bad email is INVALID_ARGUMENT', async (t) => {
  const { api } = await startTestServer(t);
  t.equal((await api.post('/v2/workspace/create', { ownerEmail: 'twice@example.com' })).status, 200);
  const again = await api.post('/v2/workspace/create', { ownerEmail: 'Twice@Example.com' });
  t.equal(again.status, 409);
  t.equal(again.body.error?.status, 'ALREADY_EXISTS');
  const concurrent = await Promise.all([1, 2, 3].map(() => api.post('/v2/workspace/create', { ownerEmail: 'race@example.com' })));
  t.same(concurrent.map((r) => r.status).sort(), [200, 409, 409], 'concurrent creates for one email: exactly one wins');
  const bad = await api.post('/v2/workspace/create', { ownerEmail: 'not-an-email' });
  t.equal(bad.status, 400);
  t.equal(bad.body.error?.message, 'data.ownerEmail must be a valid email');
});

t.test('API keys: create, list in pages, rename; other workspaces cannot see them', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace('keys@example.com');
  const headers = workspaceHeaders(credentials);
  const made = await api.post<{ apiKey: string }>('/v2/workspace/apikey/create', { ownerEmail: 'keys@example.com', type: 'production', apiKeyName: 'Prod' }, headers);
  t.equal(made.status, 200);
  const prodKey = made.body.result?.data.apiKey ?? '';
  const wrongOwner = await api.post('/v2/workspace/apikey/create', { ownerEmail: 'else@example.com', type: 'testing' }, headers);
  t.equal(wrongOwner.status, 400);
  t.match(wrongOwner.body.error?.message, /data\.ownerEmail/);

  const page1 = await api.post<Array<{ id: string; apiKeyName: string; type: string }>>('/v2/workspace/apikeys/get', { pageSize: 1 }, headers);
  t.same(page1.body.result?.data.map((k) => k.id), [credentials.apiKey]);
  const next = page1.body.result?.['nextPageToken'];
  t.type(next, 'string');
  const page2 = await api.post<Array<{ id: string; apiKeyName: string; type: string }>>('/v2/workspace/apikeys/get', { pageSize: 1, pageToken: next }, headers);
  t.same(page2.body.result?.data, [{ id: prodKey, apiKeyName: 'Prod', type: 'production' }]);
  t.equal(page2.body.result?.['nextPageToken'], undefined, 'the last page has no token');

  t.equal((await api.post('/v2/workspace/apikey/update', { apiKey: prodKey, apiKeyName: 'Production' }, headers)).status, 200);
  const renamed = await api.post<Array<{ apiKeyName: string }>>('/v2/workspace/apikeys/get', { apiKeys: [prodKey] }, headers);
  t.equal(renamed.body.result?.data[0]?.apiKeyName, 'Production');

  const stranger = await api.createWorkspace();
  const peek = await api.post('/v2/workspace/authtokens/get', { apiKey: prodKey }, workspaceHeaders(stranger));
  t.equal(peek.status, 404, "another workspace's key is not found");
  const badSecret = await api.post('/v2/workspace/get', {}, { ...headers, 'x-svc-workspace-auth-token': 'wrong' });
  t.equal(badSecret.status, 403);
});

t.test('API-key config: defaults, merge-only update, provider keys masked, empty update refused', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace('config@example.com');
  const initial = await api.call<Record<string, unknown>>(credentials, '/v2/workspace/apikeyconfig/get', {});
  t.match(initial.body.result?.data, { ownerEmail: 'config@example.com', defaultDocumentAccessType: 'public', requireJwtToken: false });
  const secretKey = 'sk-live-1234567890abcdef';
  const updated = await api.call<Record<string, unknown>>(credentials, '/v2/workspace/apikeyconfig/update', {
    defaultDocumentAccessType: 'restricted',
    aiModelApiKey: [{ provider: 'openai', customerApiKey: secretKey }],
  });
  t.equal(updated.status, 200);
  t.match(updated.body.result?.data, { defaultDocumentAccessType: 'restricted', requireJwtToken: false, aiModelsConfig: { openai: { displayText: 'sk-...def' } } });
  t.notMatch(JSON.stringify(updated.body), secretKey, 'the provider key is never echoed');
  const empty = await api.call(credentials, '/v2/workspace/apikeyconfig/update', {});
  t.equal(empty.status, 400);
  const unknown = await api.call(credentials, '/v2/workspace/apikeyconfig/update', { color: 'red' });
  t.equal(unknown.body.error?.message, 'data.color is not an accepted field');
});

t.test('workspaces and keys survive a restart; no token is stored in plaintext', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace('durable@example.com');
  const second = await first.restart();
  const got = await second.api.post('/v2/workspace/get', {}, workspaceHeaders(credentials));
  t.equal(got.status, 200);
  const call = await second.api.post('/v2/auth/generate_token', tokenData, apiKeyHeaders(credentials));
  t.equal(call.status, 200, 'the API key and its auth token still work after restart');
  const raw = readFileSync(join(second.config.dataDir, 'db', 'data.mdb')).toString('latin1');
  t.notOk(raw.includes(credentials.authToken), 'the API auth token is not in the database file');
  t.notOk(raw.includes(credentials.workspaceToken), 'the workspace auth token is not in the database file');
  t.ok(raw.includes(credentials.apiKey), 'sanity: the file does hold the (non-secret) API key id');
});
