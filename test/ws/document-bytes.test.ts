// Tests MAX_DOCUMENT_BYTES through a real server: a sync edit past it closes the socket with 4413, a REST write past it gets 400; what was within it stays.
import t from 'tap';
import * as Y from 'yjs';
import { CLOSE } from '../../src/errors.js';
import { writeUpdate } from '../../src/sync/protocol.js';
import { startTestServer } from '../helpers/server.js';
import { editorOf, rawSocket, roomName, syncBase, userToken } from '../helpers/sync.js';

const room = { organizationId: 'org', documentId: 'capped', editorId: 'main' };

t.test('an edit past MAX_DOCUMENT_BYTES is refused on both surfaces, and the document keeps what fit', async (t) => {
  const { api, url } = await startTestServer(t, { maxDocumentBytes: 64 * 1024 });
  const credentials = await api.createWorkspace();
  t.equal((await api.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'fits' })).status, 200);

  const tooBig = await api.call(credentials, '/v2/crdt/update', { ...room, type: 'text', data: 'r'.repeat(70 * 1024) });
  t.equal(tooBig.status, 400);
  t.equal(tooBig.body.error?.status, 'FAILED_PRECONDITION');
  t.match(tooBig.body.error?.message, /MAX_DOCUMENT_BYTES/, 'the message names the limit');

  const token = await userToken(api, credentials, [editorOf(room)]);
  const { socket, ended } = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`);
  t.teardown(() => socket.terminate());
  const client = new Y.Doc();
  client.getText('content').insert(0, 's'.repeat(70 * 1024));
  socket.send(writeUpdate(Y.encodeStateAsUpdate(client)));
  t.equal((await ended).code, CLOSE.DOCUMENT_TOO_LARGE, 'the socket is closed with 4413');

  const stored = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { organizationId: 'org', documentId: 'capped' });
  t.same(stored.body.result?.data.map((record) => record.data), ['fits'], 'neither edit reached the document');
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.match(metrics, /plait_limit_refusals_total\{limit="document_bytes"\} 2\n/, 'both refusals are counted');
});
