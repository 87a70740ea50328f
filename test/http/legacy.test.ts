// Tests the v1 body-credential token mint: credentials in `data`, an organization member grant, the same refusals.
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { connect, roomName, syncBase, synced, upgradeStatus, whenDocs, type Room } from '../helpers/sync.js';

t.test('/v1/auth/token/get mints a token that opens the organization’s documents', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const answer = await api.post<{ token: string }>('/v1/auth/token/get', {
    apiKey: credentials.apiKey,
    authToken: credentials.authToken,
    userId: 'legacy-user',
    userProperties: { organizationId: 'org-legacy', email: 'legacy@example.com', name: 'Legacy' },
  });
  t.equal(answer.status, 200);
  t.equal(answer.body.result?.status, 'success');
  const token = answer.body.result?.data.token ?? '';
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');

  const room: Room = { organizationId: 'org-legacy', documentId: 'doc-1', editorId: 'main' };
  const writer = connect(t, url, room, token);
  await synced(writer);
  writer.text.insert(0, 'written with a v1 token');
  // A second connection sees the edit only once the server has applied it.
  const reader = connect(t, url, room, token);
  await whenDocs([reader.doc], () => reader.text.toString() === 'written with a v1 token');
  const records = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...room });
  t.same(records.body.result?.data.map((r) => r.data), ['written with a v1 token'], 'the edit reached the server');

  // Restricted documents need an explicit grant: the organization membership of a v1 token does not open them.
  await api.call(credentials, '/v2/organizations/documents/add', { organizationId: 'org-legacy', documents: [{ documentId: 'secret' }] });
  await api.call(credentials, '/v2/organizations/documents/access/update', { organizationId: 'org-legacy', documentIds: ['secret'], accessType: 'restricted' });
  t.equal(await upgradeStatus(`${syncBase(url)}/${roomName({ ...room, documentId: 'secret' })}?token=${token}`), 403, 'a restricted document');
});

t.test('/v1/auth/token/get refuses bad credentials and bad input, naming the field', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const base = { apiKey: credentials.apiKey, authToken: credentials.authToken, userId: 'u1', userProperties: { organizationId: 'o1' } };
  const wrongToken = await api.post('/v1/auth/token/get', { ...base, authToken: 'not-the-token' });
  t.equal(wrongToken.status, 403);
  t.equal(wrongToken.body.error?.status, 'PERMISSION_DENIED');
  const unknownKey = await api.post('/v1/auth/token/get', { ...base, apiKey: 'no-such-key' });
  t.equal(unknownKey.status, 403);
  const noOrg = await api.post('/v1/auth/token/get', { ...base, userProperties: { email: 'x@example.com' } });
  t.equal(noOrg.status, 400);
  t.match(noOrg.body.error?.message, /organizationId/);
  const noKey = await api.post('/v1/auth/token/get', { authToken: credentials.authToken, userId: 'u1', userProperties: { organizationId: 'o1' } });
  t.equal(noKey.status, 400);
  t.match(noKey.body.error?.message, /apiKey/);
});

t.test('locations: update migrates the location of every thread there; data/delete removes what is at one location', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const scope = { organizationId: 'org-loc', documentId: 'deck' };
  const alice = { userId: 'alice', name: 'Alice', email: 'alice@example.com' };
  const thread = (annotationId: string, location: Record<string, unknown>) => ({ annotationId, location, commentData: [{ commentText: annotationId, from: alice }] });
  await api.call(credentials, '/v2/commentannotations/add', {
    ...scope,
    commentAnnotations: [thread('a1', { id: 'slide-1', locationName: 'Untitled' }), thread('a2', { id: 'slide-1', locationName: 'Untitled' }), thread('b1', { id: 'slide-2' })],
  });
  const creds = { apiKey: credentials.apiKey, authToken: credentials.authToken };
  const threads = async () => {
    const got = await api.call<Array<{ annotationId: string; location?: Record<string, unknown> }>>(credentials, '/v2/commentannotations/get', scope);
    return Object.fromEntries((got.body.result?.data ?? []).map((a) => [a.annotationId, a.location]));
  };

  const renamed = await api.post('/v1/organizations/documents/locations/update', {
    ...creds,
    ...scope,
    migrate: { oldLocation: { id: 'slide-1', locationName: 'Untitled', order: 1 }, newLocation: { id: 'slide-1', locationName: 'Intro' } },
    merge: true,
  });
  t.equal(renamed.status, 200);
  t.same(renamed.body.result, { status: 'success', message: 'Location updated.', data: null });
  const afterRename = await threads();
  t.same(afterRename['a1'], { id: 'slide-1', locationName: 'Intro', order: 1 }, 'merge: new fields over the old location');
  t.same(afterRename['a2'], afterRename['a1']);
  t.same(afterRename['b1'], { id: 'slide-2' }, 'other locations untouched');

  await api.post('/v1/organizations/documents/locations/update', {
    ...creds,
    ...scope,
    migrate: { oldLocation: { id: 'slide-1' }, newLocation: { id: 'slide-9', locationName: 'Moved' } },
  });
  const afterMove = await threads();
  t.same(afterMove['a1'], { id: 'slide-9', locationName: 'Moved' }, 'without merge the new location replaces, id included');

  const deleted = await api.post('/v1/organizations/documents/locations/data/delete', { ...creds, ...scope, location: { id: 'slide-9' } });
  t.equal(deleted.status, 200);
  t.same(Object.keys(await threads()), ['b1'], 'threads at the location are gone, others stay');

  const badCreds = await api.post('/v1/organizations/documents/locations/data/delete', { ...creds, authToken: 'wrong', ...scope, location: { id: 'slide-2' } });
  t.equal(badCreds.status, 403);
  t.same(Object.keys(await threads()), ['b1'], 'refused credentials delete nothing');
  const noLocation = await api.post('/v1/organizations/documents/locations/update', { ...creds, ...scope, migrate: { oldLocation: { id: 'x' } } });
  t.equal(noLocation.status, 400);
  t.match(noLocation.body.error?.message, /newLocation/);
});
