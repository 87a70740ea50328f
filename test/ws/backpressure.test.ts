// Tests the backpressure limit: a socket that stops reading is dropped, the others are unaffected.
import t from 'tap';
import { CLOSE } from '../../src/errors.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, rawSocket, roomName, syncBase, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-b', documentId: 'doc-b', editorId: 'main' };

t.test('a socket that stops reading is closed at the backpressure limit; the others carry on', async (t) => {
  // The writer sends until the kernel's buffers fill (~4 MiB here, more where they are larger): API_KEY_BYTES_PER_SECOND is off so it is never the limit met.
  const { api, url, server } = await startTestServer(t, { wsMaxBackpressureBytes: 64 * 1024, apiKeyBytesPerSecond: 0 });
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room)]);
  const slow = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`);
  // Stop reading at the TCP level: the server's buffer for this socket can only grow.
  (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
  const writer = connect(t, url, room, token);
  const reader = connect(t, url, room, token);
  await Promise.all([synced(writer), synced(reader)]);
  const chunk = 'x'.repeat(64 * 1024);
  const connections = (): number =>
    server.services.documentActors.peek({ apiKey: credentials.apiKey, organizationId: room.organizationId, documentId: room.documentId })?.connectionCount ?? 0;
  t.equal(connections(), 3);
  // Until the server drops the slow socket (the paused client cannot see the close until it reads again).
  for (let i = 0; i < 1000 && connections() === 3; i++) {
    writer.text.insert(writer.text.length, chunk);
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(connections(), 2, `dropped after ${writer.text.length / chunk.length} chunks of 64 KiB`);
  (slow.socket as unknown as { _socket: { resume(): void } })._socket.resume();
  const end = await slow.ended;
  t.equal(end.code, CLOSE.BACKPRESSURE, 'the slow socket hears the documented 1013 Try Again Later, so it reconnects and resyncs');
  const length = writer.text.length;
  await whenDocs([reader.doc], () => reader.text.length === length);
  t.equal(reader.text.length, length, 'the reading client got everything');
});
