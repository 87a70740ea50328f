// Tests the typed client: it matches the server's operations (no drift), resolves through package exports, maps errors.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { PlaitClient, PlaitError } from 'plait/client';
import { CLIENT_DIR, clientFiles } from '../../src/client/generate.js';
import { operationIdOf } from '../../src/http/openapi.js';
import { startTestServer } from '../helpers/server.js';

t.test('the generated client is what the registered operations generate today', async (t) => {
  const { server } = await startTestServer(t);
  const expected = await clientFiles(server.operations);
  const committed = ['operations.generated.ts', ...readdirSync(join(CLIENT_DIR, 'generated')).map((name) => `generated/${name}`)];
  t.same(committed.sort(), [...expected.keys()].sort(), 'the generated files are the ones the operations make; run `npm run generate:client` and commit them');
  for (const [name, source] of expected) {
    t.ok(committed.includes(name) && readFileSync(join(CLIENT_DIR, name), 'utf8') === source, `src/client/${name} is up to date; run \`npm run generate:client\` and commit it`);
  }
});

t.test('every operation the server serves is a method of the client', async (t) => {
  const { server } = await startTestServer(t);
  const methods = new Set(Object.getOwnPropertyNames(Object.getPrototypeOf(PlaitClient.prototype)));
  for (const op of server.operations) {
    const path = op.paths.find((p) => p.startsWith('/v2/')) ?? op.paths[0] ?? '';
    t.ok(methods.has(operationIdOf(path)), `${path} is client.${operationIdOf(path)}()`);
  }
});

t.test('plait/client resolves through package.json exports', async (t) => {
  const resolved = import.meta.resolve('plait/client');
  t.match(resolved, /\/src\/client\/index\.ts$/, 'tests run the source (condition plait-source); builds use dist/src/client/index.js');
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { exports: Record<string, Record<string, string>> };
  t.same(pkg.exports['./client'], {
    'plait-source': './src/client/index.ts',
    types: './dist/src/client/index.d.ts',
    default: './dist/src/client/index.js',
  });
});

t.test('errors: the envelope becomes a PlaitError with canonical and HTTP status, request id and Retry-After', async (t) => {
  const { api } = await startTestServer(t, { publicRateLimitPerMinute: 1 });
  const credentials = await api.createWorkspace();
  const client = api.client(credentials);
  const missing = await client.crdtUpdate({ organizationId: 'o', documentId: 'd', editorId: 'nobody', type: 'text', data: 'x' }).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(missing instanceof PlaitError);
  t.match(missing, { status: 'NOT_FOUND', httpStatus: 404, message: 'No CRDT data found for this editor ID.' });
  t.match((missing as PlaitError).requestId, /\S+/);

  // The fixture's workspace/create took the one public request of this minute: the next is rate limited.
  const limited = await api.client().workspaceCreate({ ownerEmail: 'late@example.com' }).catch((error: unknown) => error);
  t.match(limited, { status: 'RESOURCE_EXHAUSTED', httpStatus: 429 });
  t.ok(((limited as PlaitError).retryAfterSeconds ?? 0) >= 1, 'Retry-After is read');
});

t.test('a non-JSON answer (a proxy page) still rejects with a PlaitError', async (t) => {
  const client = new PlaitClient({
    baseUrl: 'http://127.0.0.1:1',
    fetch: async () => new Response('<html>bad gateway</html>', { status: 502 }),
  });
  await t.rejects(client.presenceGet({ organizationId: 'o', documentId: 'd' }), { name: 'PlaitError', status: 'INTERNAL', httpStatus: 502 });
});
