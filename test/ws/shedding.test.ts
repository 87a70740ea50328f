// Tests shedding end to end: a document whose mailbox is full answers REST with 429 + Retry-After and closes a
// socket that sends a frame with 1013, then serves both normally once the mailbox drains.
import t from 'tap';
import * as encoding from 'lib0/encoding';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { startTestServer } from '../helpers/server.js';
import { editorOf, rawSocket, roomName, syncBase, userToken, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-shed', documentId: 'doc-shed', editorId: 'main' };
const CAPACITY = 16;

function updateFrame(text: string): Uint8Array {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, text);
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, 0);
  syncProtocol.writeUpdate(encoder, Y.encodeStateAsUpdate(doc));
  return encoding.toUint8Array(encoder);
}

t.test('a full mailbox: REST gets 429 with Retry-After, a sending socket is closed with 1013; both work once it drains', async (t) => {
  const { api, url, server } = await startTestServer(t, { mailboxCapacity: CAPACITY });
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room)]);
  const socketUrl = `${syncBase(url)}/${roomName(room)}?token=${token}`;
  const sender = await rawSocket(socketUrl);
  t.teardown(() => sender.socket.terminate());
  // Attached once the server's SyncStep1 arrived (it is sent from the mailbox when the connection joins).
  if (sender.frames.length === 0) await new Promise((resolve) => sender.socket.once('message', resolve));

  // Hold the document's mailbox on one task and queue CAPACITY more behind it: the mailbox is now full.
  const lease = await server.services.documentActors.acquire({ apiKey: credentials.apiKey, organizationId: room.organizationId, documentId: room.documentId });
  t.teardown(() => lease.release());
  let unblock = (): void => undefined;
  const held = lease.actor.run(() => new Promise<void>((resolve) => (unblock = resolve)));
  const queued = Array.from({ length: CAPACITY }, () => lease.actor.run(() => undefined));

  const add = (annotationId: string) =>
    api.call<Record<string, { success: boolean }>>(credentials, '/v2/commentannotations/add', {
      organizationId: room.organizationId,
      documentId: room.documentId,
      commentAnnotations: [{ annotationId, commentData: [{ commentText: 'hi', from: { userId: 'u1' } }] }],
    });
  const shed = await add('shed');
  t.equal(shed.status, 429, 'REST is refused while the mailbox is full');
  t.equal(shed.body.error?.status, 'RESOURCE_EXHAUSTED');
  t.equal(shed.headers.get('retry-after'), '1', 'with a Retry-After header');

  sender.socket.send(updateFrame('shed'));
  t.match(await sender.ended, { code: 1013 }, 'a socket whose frame finds the mailbox full is closed with 1013 (reconnect and resync)');

  unblock();
  await Promise.all([held, ...queued]);
  const accepted = await add('accepted');
  t.equal(accepted.status, 200, 'REST is served again once the mailbox drained');
  t.equal(accepted.body.result?.data['accepted']?.success, true);
  const again = await rawSocket(socketUrl);
  t.teardown(() => again.socket.terminate());
  if (again.frames.length === 0) await new Promise((resolve) => again.socket.once('message', resolve));
  t.pass('a socket connects again');
});
