// Tests issue 10 items 2, 4 and 5: deep or oversized input is refused with 400, and a write that fails changes nothing.
import t from 'tap';
import { MAX_JSON_DEPTH, MAX_XML_DEPTH } from '../../src/limits.js';
import { apiKeyHeaders } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, userToken } from '../helpers/sync.js';

/** `[[[...]]]` nested `depth` times, built without recursion. */
function nestedArrays(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i++) value = [value];
  return value;
}

function nestedObjects(depth: number): unknown {
  let value: unknown = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

const store = { organizationId: 'org-deep', documentId: 'doc-deep', editorId: 'main' };

t.test('100k nested arrays in CRDT map data: 400 naming the field; the store, its unload and the process carry on', async (t) => {
  const { api, server } = await startTestServer(t, { docIdleUnloadMs: 0 });
  const credentials = await api.createWorkspace();
  const unloaded = new Promise<void>((resolve) => server.services.documentActors.onUnloaded((key) => key.apiKey === credentials.apiKey && resolve()));
  // Sent as text: JSON.stringify itself overflows the stack on 100k levels.
  const body = `{"data":${JSON.stringify({ ...store, type: 'map' }).slice(0, -1)},"data":{"k":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}`;
  const deep = await api.send('/v2/crdt/add', body, apiKeyHeaders(credentials));
  t.equal(deep.status, 400);
  t.equal(deep.body.error?.status, 'INVALID_ARGUMENT');
  t.match(deep.body.error?.message, new RegExp(`^data\\.data\\.k\\[0\\].* is nested more than ${MAX_JSON_DEPTH} levels deep$`));
  const plain = await api.call(credentials, '/v2/crdt/add', { ...store, type: 'map', data: { k: 'v' } });
  t.equal(plain.status, 200, 'a plain add to the same store then works');
  // The document unloads with a final snapshot (DOC_IDLE_UNLOAD_MS 0) and loads again from disk.
  await unloaded;
  const read = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', store);
  t.same(read.body.result?.data[0]?.data, { k: 'v' });
  const other = await api.createWorkspace();
  t.equal((await api.call(other, '/v2/crdt/add', { ...store, type: 'text', data: 'x' })).status, 200, 'another tenant is unaffected');
});

t.test('a REST write Yjs cannot hold rolls back completely: stored content and new clients see the state before it', async (t) => {
  const { api, url, server } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  t.equal((await api.call(credentials, '/v2/crdt/add', { ...store, type: 'map', data: { kept: 1 } })).status, 200);
  const key = { apiKey: credentials.apiKey, organizationId: store.organizationId, documentId: store.documentId };
  // Past the REST depth check, straight to the actor: the write itself must fail whole.
  const failed = server.services.documentActors.use(key, (actor) => actor.update('main', { type: 'map', data: { kept: 2, deep: nestedArrays(200_000) } }));
  const error = await failed.then(
    () => undefined,
    (reason: unknown) => reason as { status?: string },
  );
  t.equal(error?.status, 'INVALID_ARGUMENT', 'the write is refused as bad input');
  const read = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', store);
  t.same(read.body.result?.data[0]?.data, { kept: 1 }, 'nothing of the failed write is stored');
  const token = await userToken(api, credentials, [editorOf(store)]);
  const client = connect(t, url, store, token, { type: 'map' });
  await synced(client);
  t.same(client.doc.getMap('content').toJSON(), { kept: 1 }, 'a new client gets the state');
  t.equal((await api.call(credentials, '/v2/crdt/update', { ...store, type: 'map', data: { kept: 3 } })).status, 200, 'later writes work');
});

t.test('crdt/update with a 1000-deep XML tree: 400, and the stored XML is unchanged', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const xmlStore = { ...store, editorId: 'xml' };
  t.equal((await api.call(credentials, '/v2/crdt/add', { ...xmlStore, type: 'xml', data: '<p>kept</p>' })).status, 200);
  const deep = `${'<d>'.repeat(1000)}x${'</d>'.repeat(1000)}`;
  const response = await api.call(credentials, '/v2/crdt/update', { ...xmlStore, type: 'xml', data: deep });
  t.equal(response.status, 400);
  t.match(response.body.error?.message, `nested more than ${MAX_XML_DEPTH} levels deep`);
  const read = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', xmlStore);
  t.equal(read.body.result?.data[0]?.data, '<p>kept</p>');
});

t.test('deep or oversized free-form fields and out-of-range dates: 400 naming the field, never 500', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const comment = (extra: object): object => ({
    organizationId: 'o',
    documentId: 'd',
    commentAnnotations: [{ commentData: [{ commentText: 'x', from: { userId: 'u' } }], ...extra }],
  });
  const cases: Array<[string, object, RegExp]> = [
    ['/v2/commentannotations/add', comment({ context: nestedObjects(100) }), /^data\.commentAnnotations\[0\]\.context\.a.* is nested more than 64 levels deep$/],
    ['/v2/commentannotations/add', comment({ context: { big: 'x'.repeat(70_000) } }), /^data\.commentAnnotations\[0\]\.context must be at most 65536 bytes as JSON$/],
    [
      '/v2/commentannotations/add',
      { organizationId: 'o', documentId: 'd', commentAnnotations: [{ commentData: [{ commentText: 'x', from: { userId: 'u' }, createdAt: 2 ** 64 }] }] },
      /^data\.commentAnnotations\[0\]\.commentData\[0\]\.createdAt must be <= 8640000000000000$/,
    ],
    ['/v2/organizations/add', { organizations: [{ organizationId: 'o', meta: nestedObjects(100) }] }, /nested more than 64 levels deep$/],
    ['/v2/organizations/add', { organizations: [{ organizationId: 'o', meta: 'x'.repeat(70_000) }] }, /^data\.organizations\[0\] must be at most 65536 bytes as JSON$/],
    ['/v2/users/add', { organizationId: 'o', users: [{ userId: 'u', meta: nestedArrays(1000) }] }, /nested more than 64 levels deep$/],
    [
      '/v2/auth/generate_token',
      { userId: 'u', userProperties: { name: 'n', email: 'e@example.com', extra: nestedObjects(100) }, permissions: { resources: [] } },
      /^data\.userProperties\.extra.* is nested more than 64 levels deep$/,
    ],
    [
      '/v2/auth/generate_token',
      { userId: 'u', userProperties: { name: 'n', email: 'e@example.com', extra: 'x'.repeat(70_000) }, permissions: { resources: [] } },
      /^data\.userProperties must be at most 65536 bytes as JSON$/,
    ],
  ];
  for (const [path, data, message] of cases) {
    const response = await api.call(credentials, path, data);
    t.equal(response.status, 400, `${path}: 400`);
    t.match(response.body.error?.message, message, `${path}: ${response.body.error?.message ?? ''}`);
  }
});
