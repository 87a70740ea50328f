// Tests /v2/crdt/get, add and update end to end: all four types, errors, live delivery to a connected client.
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

interface CrdtRecord {
  data: unknown;
  id: string;
  lastUpdate: string;
  lastUpdatedBy: string;
  sessionId: string | null;
}

const where = { organizationId: 'org-r', documentId: 'doc-r' };

const cases = [
  { type: 'text', first: 'Hello world', second: 'Hello brave new world' },
  { type: 'map', first: { title: 'Draft', tags: ['a'], count: 1 }, second: { title: 'Final', count: 2, done: true } },
  { type: 'array', first: [1, 'two', { three: 3 }], second: [1, { three: 3 }, 'four', null] },
  {
    type: 'xml',
    first: '<paragraph>Hello &amp; welcome</paragraph>',
    second: '<heading level="1">Title</heading><paragraph>Body &lt;text&gt;</paragraph>',
  },
] as const;

t.test('add, get and update round-trip every store type', async (t) => {
  const { api } = await startTestServer(t);
  const client = api.client(await api.createWorkspace());
  for (const { type, first, second } of cases) {
    const editorId = `editor-${type}`;
    const added = await client.crdtAdd({ ...where, editorId, type, data: first });
    t.equal(added.status, 'success', `${type}: add`);
    const before = Date.now();
    let got = await client.crdtGet<CrdtRecord[]>({ ...where, editorId });
    t.same(got.data.map((r) => r.data), [first], `${type}: get returns what add wrote`);
    await t.rejects(client.crdtAdd({ ...where, editorId, type, data: first }), { name: 'PlaitError', status: 'ALREADY_EXISTS', httpStatus: 409 }, `${type}: a second add fails`);
    const updated = await client.crdtUpdate({ ...where, editorId, type, data: second });
    t.equal(updated.status, 'success', `${type}: update`);
    got = await client.crdtGet<CrdtRecord[]>({ ...where, editorId });
    const record = got.data[0];
    t.same(record?.data, second, `${type}: get returns what update wrote`);
    t.equal(record?.id, editorId);
    t.equal(record?.lastUpdatedBy, 'rest-api');
    t.equal(record?.sessionId, null);
    t.ok(Date.parse(record?.lastUpdate ?? '') >= before - 1000, `${type}: lastUpdate is an ISO time`);
  }
  const all = await client.crdtGet<CrdtRecord[]>(where);
  t.same(all.data.map((r) => r.id).sort(), cases.map((c) => `editor-${c.type}`).sort(), 'no editorId: every store');
});

t.test('update of an absent store is NOT_FOUND; mismatched data is INVALID_ARGUMENT', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const missing = await api.call(credentials, '/v2/crdt/update', { ...where, editorId: 'nobody', type: 'text', data: 'x' });
  t.equal(missing.status, 404);
  t.equal(missing.body.error?.message, 'No CRDT data found for this editor ID.');
  const mismatch = await api.call(credentials, '/v2/crdt/add', { ...where, editorId: 'e', type: 'text', data: { not: 'text' } });
  t.equal(mismatch.status, 400);
  t.equal(mismatch.body.error?.message, 'Data must be a string for type text.');
  const badXml = await api.call(credentials, '/v2/crdt/add', { ...where, editorId: 'e', type: 'xml', data: '<open>' });
  t.equal(badXml.status, 400);
  const noOrg = await api.call(credentials, '/v2/crdt/get', { documentId: 'd' });
  t.equal(noOrg.body.error?.status, 'INVALID_ARGUMENT');
  const none = await api.call<CrdtRecord[]>(credentials, '/v2/crdt/get', { ...where, editorId: 'nobody' });
  t.same(none.body.result?.data, [], 'get of an unknown store is an empty list');
});

t.test('a REST update reaches a connected client at once', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const room: Room = { ...where, editorId: 'live' };
  await api.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'The quick fox' });
  const client = connect(t, url, room, await userToken(api, credentials, [editorOf(room)]), { type: 'text' });
  await synced(client);
  t.equal(client.text.toString(), 'The quick fox');
  const deltas: unknown[] = [];
  client.text.observe((event) => deltas.push(event.delta));
  const response = await api.call(credentials, '/v2/crdt/update', { ...room, type: 'text', data: 'The quick brown fox' });
  t.equal(response.status, 200);
  await whenDocs([client.doc], () => client.text.toString() === 'The quick brown fox');
  t.same(deltas, [[{ retain: 10 }, { insert: 'brown ' }]], 'a minimal edit, not a rewrite of the whole text');
});

t.test('get reads a store a client created without naming its type', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const room: Room = { ...where, editorId: 'untyped' };
  const token = await userToken(api, credentials, [editorOf(room)]);
  const writer = connect(t, url, room, token);
  await synced(writer);
  writer.doc.getMap('content').set('k', 'v');
  // Once a second client has the entry, the server has applied it.
  const observer = connect(t, url, room, token);
  await whenDocs([observer.doc], () => observer.doc.getMap('content').get('k') === 'v');
  const got = await api.call<CrdtRecord[]>(credentials, '/v2/crdt/get', room);
  t.same(got.body.result?.data[0]?.data, { k: 'v' }, 'inferred as a map');
  t.equal(got.body.result?.data[0]?.sessionId?.length, 36, 'the writing connection\'s session id');
  t.match(got.body.result?.data[0]?.lastUpdatedBy, /^user-/, 'the writing user');
});
