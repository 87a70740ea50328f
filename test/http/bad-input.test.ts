import { request } from 'node:http';
import t from 'tap';
import { apiKeyHeaders } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';

t.test('bad input gets the error envelope with the right status and a message naming the problem', async (t) => {
  const { api } = await startTestServer(t, { maxBodyBytes: 4096 });
  const credentials = await api.createWorkspace();
  const auth = apiKeyHeaders(credentials);

  const malformed = await api.send('/v2/auth/generate_token', '{"data": {', auth);
  t.equal(malformed.status, 400);
  t.equal(malformed.body.error?.status, 'INVALID_ARGUMENT');
  t.match(malformed.body.error?.message, /not valid JSON/);

  const notObject = await api.send('/v2/auth/generate_token', '[1,2]', auth);
  t.equal(notObject.status, 400);
  t.match(notObject.body.error?.message, /must be a JSON object/);

  const unwrapped = await api.send('/v2/auth/generate_token', JSON.stringify({ userId: 'u1' }), auth);
  t.equal(unwrapped.status, 400);
  t.match(unwrapped.body.error?.message, /wrapped in a top-level "data" object/);

  const dataNotObject = await api.send('/v2/auth/generate_token', JSON.stringify({ data: 'x' }), auth);
  t.equal(dataNotObject.status, 400);
  t.equal(dataNotObject.body.error?.message, 'data must be an object');

  const empty = await api.send('/v2/auth/generate_token', '', auth);
  t.equal(empty.status, 400);
  t.match(empty.body.error?.message, /empty/);

  const wrongType = await api.send('/v2/auth/generate_token', JSON.stringify({ data: {} }), { ...auth, 'content-type': 'text/plain' });
  t.equal(wrongType.status, 415);
  t.equal(wrongType.body.error?.status, 'INVALID_ARGUMENT');
  t.match(wrongType.body.error?.message, /content-type must be application\/json/);

  const missingField = await api.call(credentials, '/v2/auth/generate_token', { userProperties: { name: 'A', email: 'a@x.io' }, permissions: { resources: [] } });
  t.equal(missingField.status, 400);
  t.equal(missingField.body.error?.message, 'data.userId is required');

  const nestedField = await api.call(credentials, '/v2/auth/generate_token', {
    userId: 'u1',
    userProperties: { name: 'A', email: 'a@x.io' },
    permissions: { resources: [{ type: 'planet', id: 'p' }] },
  });
  t.equal(nestedField.status, 400);
  t.match(nestedField.body.error?.message, /^data\.permissions\.resources\[0\]\.type must be one of/);

  const tooLarge = await api.send('/v2/auth/generate_token', JSON.stringify({ data: { pad: 'x'.repeat(5000) } }), auth);
  t.equal(tooLarge.status, 413);
  t.equal(tooLarge.body.error?.status, 'INVALID_ARGUMENT');
  t.match(tooLarge.body.error?.message, /exceeds the limit of 4096 bytes/);

  const unknownPath = await api.post('/v2/nothing/here', {}, auth);
  t.equal(unknownPath.status, 404);
  t.equal(unknownPath.body.error?.status, 'NOT_FOUND');

  const wrongMethod = await api.send('/v2/auth/generate_token', '', auth, 'GET');
  t.equal(wrongMethod.status, 405);
  t.equal(wrongMethod.headers.get('allow'), 'POST, OPTIONS');
  t.match(wrongMethod.body.error?.message, /method GET is not allowed/);
});

t.test('auth header problems are PERMISSION_DENIED naming what is wrong', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const data = { userId: 'u1', userProperties: { name: 'A', email: 'a@x.io' }, permissions: { resources: [] } };

  const noKey = await api.post('/v2/auth/generate_token', data, { 'x-svc-auth-token': credentials.authToken });
  t.equal(noKey.status, 403);
  t.equal(noKey.body.error?.status, 'PERMISSION_DENIED');
  t.match(noKey.body.error?.message, /x-svc-api-key header is required/);

  const noToken = await api.post('/v2/auth/generate_token', data, { 'x-svc-api-key': credentials.apiKey });
  t.match(noToken.body.error?.message, /x-svc-auth-token header is required/);

  const wrongToken = await api.post('/v2/auth/generate_token', data, { 'x-svc-api-key': credentials.apiKey, 'x-svc-auth-token': 'nope' });
  t.equal(wrongToken.status, 403);
  t.match(wrongToken.body.error?.message, /API key is invalid/);

  const other = await api.createWorkspace();
  const crossed = await api.post('/v2/auth/generate_token', data, { 'x-svc-api-key': credentials.apiKey, 'x-svc-auth-token': other.authToken });
  t.equal(crossed.status, 403, 'a token of another key does not open this key');

  const noWorkspace = await api.post('/v2/workspace/get', {}, {});
  t.equal(noWorkspace.status, 403);
  t.match(noWorkspace.body.error?.message, /x-svc-workspace-id header is required/);

  // The workspace id is looked up as an LMDB key: one too long for a key was a RangeError, answered 500 (fuzz campaign).
  for (const id of ['x'.repeat(300), 'x'.repeat(2000), 'x'.repeat(20_000)]) {
    const tooLong = await api.post('/v2/workspace/get', {}, { 'x-svc-workspace-id': id, 'x-svc-workspace-auth-token': credentials.workspaceToken });
    t.equal(tooLong.status, 403, `a ${id.length}-character workspace id is refused, not a 500`);
    t.match(tooLong.body.error, { status: 'PERMISSION_DENIED', message: /workspace id or workspace auth token is not valid/ });
  }
});

t.test('CORS preflight is answered and every response carries a request id', async (t) => {
  const { url, api } = await startTestServer(t, { corsOrigin: 'https://app.example' });
  const preflight = await fetch(`${url}/v2/workspace/create`, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-svc-api-key' },
  });
  t.equal(preflight.status, 204);
  t.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
  t.match(preflight.headers.get('access-control-allow-headers') ?? '', /x-svc-api-key/);

  const response = await api.post('/v2/workspace/create', { ownerEmail: 'cors@example.com' }, { 'x-request-id': 'req-123' });
  t.equal(response.headers.get('x-request-id'), 'req-123', 'a caller-supplied request id is echoed');
  t.equal(response.headers.get('access-control-allow-origin'), 'https://app.example');
  const generated = await api.post('/v2/workspace/get', {});
  t.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
});

t.test('public operations are rate limited with RESOURCE_EXHAUSTED and Retry-After', async (t) => {
  const { api } = await startTestServer(t, { publicRateLimitPerMinute: 2 });
  t.equal((await api.post('/v2/workspace/create', { ownerEmail: 'r1@example.com' })).status, 200);
  t.equal((await api.post('/v2/workspace/create', { ownerEmail: 'r2@example.com' })).status, 200);
  const limited = await api.post('/v2/workspace/create', { ownerEmail: 'r3@example.com' });
  t.equal(limited.status, 429);
  t.equal(limited.body.error?.status, 'RESOURCE_EXHAUSTED');
  t.ok(Number(limited.headers.get('retry-after')) >= 1, 'Retry-After names whole seconds');
});

t.test('a body over the cap is rejected while it streams, before the client finishes sending', async (t) => {
  const { server } = await startTestServer(t, { maxBodyBytes: 8192 });
  const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server.port, path: '/v2/workspace/create', method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    // Chunked upload that never ends on its own: only the server's early 413 can complete this promise.
    req.write('{"data":{"pad":"');
    for (let i = 0; i < 4; i++) req.write('x'.repeat(4096));
  });
  t.equal(response.status, 413);
  t.match(JSON.parse(response.body), { error: { status: 'INVALID_ARGUMENT' } });
});
