// Tests the loaded-documents budget through a real server: REST loads past a key's share, the 429 when its documents are all connected, reloads with comments and CRDT data.
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { editorOf, rawSocket, roomName, syncBase, userToken, type Room } from '../helpers/sync.js';
import type { DocumentKey } from '../../src/document-key.js';

const room = (documentId: string): Room => ({ organizationId: 'org', documentId, editorId: 'main' });

t.test('a key whose loaded documents are all connected gets 429 for a REST load; once one is closed the load makes room', async (t) => {
  const { api, url, server } = await startTestServer(t, { maxLoadedDocumentsPerKey: 2 });
  const actors = server.services.documentActors;
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room('a')), editorOf(room('b'))]);
  let left = (): void => undefined;
  const leftOnce = new Promise<void>((resolve) => (left = resolve));
  actors.onConnection({ joined: () => undefined, left: () => left() });
  const sockets = await Promise.all(['a', 'b'].map((id) => rawSocket(`${syncBase(url)}/${roomName(room(id))}?token=${token}`)));
  t.teardown(() => sockets.forEach(({ socket }) => socket.terminate()));

  const refused = await api.call(credentials, '/v2/crdt/add', { ...room('c'), type: 'text', data: 'no room' });
  t.equal(refused.status, 429);
  t.equal(refused.body.error?.status, 'RESOURCE_EXHAUSTED');
  t.match(refused.body.error?.message, /limit of 2 loaded documents \(MAX_LOADED_DOCUMENTS_PER_KEY\)/, 'the message names the limit');
  t.equal(refused.headers.get('retry-after'), '5');
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.match(metrics, /plait_limit_refusals_total\{limit="loaded_documents_per_key"\} 1\n/, 'the refusal is counted in /metrics');

  const other = await api.createWorkspace();
  t.equal((await api.call(other, '/v2/crdt/add', { ...room('c'), type: 'text', data: 'another key' })).status, 200, 'another key is not refused');

  sockets[0]?.socket.close();
  await leftOnce;
  const admitted = await api.call(credentials, '/v2/crdt/add', { ...room('c'), type: 'text', data: 'fits now' });
  t.equal(admitted.status, 200, 'the closed document was unloaded to make room');
  const key = (documentId: string): DocumentKey => ({ apiKey: credentials.apiKey, organizationId: 'org', documentId });
  t.notOk(actors.peek(key('a')), 'a (no connection left) was unloaded');
  t.ok(actors.peek(key('b')), 'b, still connected, stays');
});

t.test('documents unloaded for the budget come back with their comments and CRDT data', async (t) => {
  const { api, url, server } = await startTestServer(t, { maxLoadedDocumentsPerKey: 1 });
  const actors = server.services.documentActors;
  const credentials = await api.createWorkspace();
  const unloaded: string[] = [];
  let twoUnloaded = (): void => undefined;
  const bothUnloaded = new Promise<void>((resolve) => (twoUnloaded = resolve));
  actors.onUnloaded((key) => unloaded.push(key.documentId) === 2 && twoUnloaded());
  t.equal((await api.call(credentials, '/v2/crdt/add', { ...room('first'), type: 'text', data: 'kept text' })).status, 200);
  const comment = { organizationId: 'org', documentId: 'first', commentAnnotations: [{ annotationId: 'c1', commentData: [{ commentText: 'kept comment', from: { userId: 'u1' } }] }] };
  t.equal((await api.call(credentials, '/v2/commentannotations/add', comment)).status, 200);
  for (const id of ['second', 'third']) t.equal((await api.call(credentials, '/v2/crdt/add', { ...room(id), type: 'text', data: id })).status, 200);
  await bothUnloaded;
  t.same(unloaded, ['first', 'second'], 'each new document pushed out the least recently used one, its own key\'s');

  const text = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { organizationId: 'org', documentId: 'first' });
  t.same(text.body.result?.data.map((record) => record.data), ['kept text']);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.ok(Number(/^plait_documents_unloaded_early_total (\d+)$/m.exec(metrics)?.[1]) >= 2, 'the early unloads are counted in /metrics');
  t.ok(Number(/^plait_documents_loaded_bytes (\d+)$/m.exec(metrics)?.[1]) > 0, 'and the budget\'s estimate of the loaded bytes is exported');
  const comments = await api.call<Array<{ annotationId: string; comments: Array<{ commentText: string }> }>>(credentials, '/v2/commentannotations/get', { organizationId: 'org', documentId: 'first' });
  t.same(comments.body.result?.data.map((annotation) => [annotation.annotationId, annotation.comments[0]?.commentText]), [['c1', 'kept comment']]);
});

t.test("a small document read from disk by REST counts its held first answer in the budget until a joiner takes it", async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  t.equal((await first.api.call(credentials, '/v2/crdt/add', { ...room('small'), type: 'text', data: 'x'.repeat(4000) })).status, 200);
  // The stop snapshots the document: the next start loads it from disk, with no tail.
  const { api, server } = await first.restart();
  t.equal((await api.call(credentials, '/v2/crdt/get', { organizationId: 'org', documentId: 'small' })).status, 200);
  const actors = server.services.documentActors;
  const key: DocumentKey = { apiKey: credentials.apiKey, organizationId: 'org', documentId: 'small' };
  const lease = await actors.acquire(key);
  const { storedBytes, answerBytes } = lease.actor;
  lease.release();
  t.ok(answerBytes > 4000, `the first answer is held: ${answerBytes} bytes`);
  t.equal(actors.stats().loadedBytes, storedBytes + answerBytes, 'and counted with the stored bytes');
});
