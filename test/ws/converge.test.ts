import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

t.test('two y-websocket providers editing one text store converge', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const room: Room = { organizationId: 'org-1', documentId: 'doc-1', editorId: 'editor-1' };
  const token = await userToken(api, credentials, [editorOf(room)]);
  const a = connect(t, url, room, token);
  const b = connect(t, url, room, token);
  await Promise.all([synced(a), synced(b)]);
  a.text.insert(0, 'hello ');
  b.text.insert(0, 'world ');
  await whenDocs([a.doc, b.doc], () => a.text.length === 12 && a.text.toString() === b.text.toString());
  t.equal(a.text.toString(), b.text.toString());
});
