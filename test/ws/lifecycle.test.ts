// Tests how real sync sockets end: token expiry (4401, on a clock the test advances), graceful stop (1012, 503 on
// upgrade while stopping, the STOP_DRAIN_MS timeout), document deletion (4404), and per-turn merged frames on the wire.
import type { Socket } from 'node:net';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import t from 'tap';
import type WebSocket from 'ws';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { createLogger } from '../../src/log.js';
import { apiKeyHeaders, type Credentials } from '../helpers/api.js';
import { ManualClock } from '../helpers/clock.js';
import { openSocket, response } from '../helpers/raw-http.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, rawSocket, roomName, syncBase, synced, upgradeStatus, userToken, type Room, type SocketEnd } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-life', documentId: 'doc-life', editorId: 'main' };
const socketUrl = (url: string, token: string): string => `${syncBase(url)}/${roomName(room)}?token=${token}`;

/** Whether the socket is still open: a ping the server answers (pong) before any close frame arrives. */
function stillOpen(socket: WebSocket, ended: Promise<SocketEnd>): Promise<boolean> {
  const pong = new Promise<boolean>((resolve) => socket.once('pong', () => resolve(true)));
  socket.ping();
  return Promise.race([pong, ended.then(() => false)]);
}

/** A y-websocket frame carrying one Yjs update (messageSync, then y-protocols' update message). */
function updateFrame(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, 0);
  syncProtocol.writeUpdate(encoder, update);
  return encoding.toUint8Array(encoder);
}

/** The Yjs update of a sync-update frame, or undefined for any other frame. */
function updateOf(frame: Uint8Array): Uint8Array | undefined {
  const decoder = decoding.createDecoder(frame);
  if (decoding.readVarUint(decoder) !== 0 || decoding.readVarUint(decoder) !== syncProtocol.messageYjsUpdate) return undefined;
  return decoding.readVarUint8Array(decoder);
}

t.test('a socket whose user token expires is closed with 4401; the token no longer opens one', async (t) => {
  const clock = new ManualClock();
  const { api, url } = await startTestServer(t, { userTokenLifetimeSeconds: 60 }, undefined, { clock });
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const { socket, ended } = await rawSocket(socketUrl(url, token));
  t.teardown(() => socket.terminate());
  clock.advance(59_000);
  t.ok(await stillOpen(socket, ended), 'open a second before the token expires');
  clock.advance(1_000);
  t.notOk(await stillOpen(socket, ended), 'not open once it has expired');
  t.match(await ended, { code: 4401, reason: 'the user token has expired' }, 'closed with 4401 when it expires');
  t.equal(await upgradeStatus(socketUrl(url, token)), 401, 'the expired token is refused at the upgrade');
});



function upgradeRequest(token: string): string {
  return (
    `GET /sync/${roomName(room)}?token=${token} HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\n` +
    'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'
  );
}

function halfSentAdd(credentials: Credentials, annotationId: string): { head: string; rest: string } {
  const body = JSON.stringify({ data: { organizationId: room.organizationId, documentId: room.documentId, commentAnnotations: [{ annotationId, commentData: [{ commentText: 'x', from: { userId: 'u' } }] }] } });
  const headers = Object.entries({ ...apiKeyHeaders(credentials), 'content-type': 'application/json', 'content-length': String(body.length) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return { head: `POST /v2/commentannotations/add HTTP/1.1\r\nhost: x\r\n${headers}\r\n${body.slice(0, 10)}`, rest: body.slice(10) };
}

t.test('graceful stop: upgrades get 503 while requests drain, STOP_DRAIN_MS bounds the wait, live sockets close with 1012', async (t) => {
  const clock = new ManualClock();
  const warnings: Array<Record<string, unknown>> = [];
  const log = createLogger('warn', {}, (line) => warnings.push(JSON.parse(line) as Record<string, unknown>));
  const { api, url, server } = await startTestServer(t, { stopDrainMs: 5_000 }, undefined, { clock, log });
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room)]);
  const provider = connect(t, url, room, token);
  await synced(provider);
  const providerClosed = new Promise<number>((resolve) => provider.provider.on('connection-close', (event: { code: number } | null) => resolve(event?.code ?? -1)));
  const raw = await rawSocket(socketUrl(url, token));
  t.teardown(() => raw.socket.terminate());

  // Two keep-alive connections made before the stop: one holds a request whose body never finishes, one upgrades later.
  const stuck = await openSocket(server.port);
  const late = await openSocket(server.port);
  t.teardown(() => {
    stuck.destroy();
    late.destroy();
  });
  const warm = response(late);
  late.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
  t.equal((await warm).status, 200, 'the second connection is open and kept alive');
  stuck.write(halfSentAdd(credentials, 'never-finished').head);
  t.equal((await api.call(credentials, '/v2/presence/get', room)).status, 200, 'the half-sent request has reached its handler');

  let stopped = false;
  const stopping = server.stop().then(() => (stopped = true));
  const refused = response(late);
  late.write(upgradeRequest(token));
  const answer = await refused;
  t.equal(answer.status, 503, 'an upgrade on an open connection is refused once the stop began');
  t.match(JSON.parse(answer.body), { error: { status: 'UNAVAILABLE' } });
  t.ok(await stillOpen(raw.socket, raw.ended), 'live sockets stay open while requests drain');

  clock.advance(4_999);
  t.ok(await stillOpen(raw.socket, raw.ended), 'still draining a millisecond before STOP_DRAIN_MS');
  t.notOk(stopped, 'the stop waits for the request in flight');
  clock.advance(1);
  await stopping;
  // uWS would abort the stuck request by itself after its 10 s HTTP idle timeout: the log tells the two apart.
  t.match(warnings.filter((w) => w['msg'] === 'stopping with requests still in flight'), [{ requests: 1, waitedMs: 5_000 }], 'the stop went on after STOP_DRAIN_MS, the request still in flight');
  t.match(await raw.ended, { code: 1012 }, 'a raw socket is closed with 1012 (service restart)');
  t.equal(await providerClosed, 1012, 'a y-websocket provider sees 1012 too');
});

t.test('deleting a document closes its sockets with 4404', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  t.equal((await api.call(credentials, '/v2/organizations/documents/add', { organizationId: room.organizationId, documents: [{ documentId: room.documentId }] })).status, 200);
  const token = await userToken(api, credentials, [editorOf(room)]);
  const provider = connect(t, url, room, token);
  await synced(provider);
  const providerClosed = new Promise<number>((resolve) => provider.provider.on('connection-close', (event: { code: number } | null) => resolve(event?.code ?? -1)));
  const raw = await rawSocket(socketUrl(url, token));
  t.teardown(() => raw.socket.terminate());
  const deleted = await api.call<Record<string, { success: boolean }>>(credentials, '/v2/organizations/documents/delete', { organizationId: room.organizationId, documentIds: [room.documentId] });
  t.equal(deleted.body.result?.data[room.documentId]?.success, true);
  t.match(await raw.ended, { code: 4404 }, 'a raw socket is closed with 4404');
  t.equal(await providerClosed, 4404, 'a y-websocket provider sees 4404 too');
});

t.test('an open socket holds a lease on its document until it closes', async (t) => {
  const { server, api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room)]);
  const key = { apiKey: credentials.apiKey, ...room };
  const leases = (): number | undefined => server.services.documentActors.peek(key)?.leases;
  const first = await rawSocket(socketUrl(url, token));
  const second = await rawSocket(socketUrl(url, token));
  // uWS gives open() a copy of the upgrade's user data: the edge once took that for "open() never ran" and gave
  // every lease back right after the upgrade, leaving open documents held by their connection count alone.
  t.equal(leases(), 2, 'one lease per open socket');
  first.socket.close();
  await first.ended;
  t.equal(leases(), 1, 'a closed socket gives its lease back, once');
  second.socket.close();
  await second.ended;
  t.equal(leases(), 0, 'no lease is left when every socket closed');
});

t.test("one sender's frames read in one turn reach another socket as one merged frame", async (t) => {
  const { api, url } = await startTestServer(t);
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const observer = await rawSocket(socketUrl(url, token));
  const sender = await rawSocket(socketUrl(url, token));
  t.teardown(() => {
    observer.socket.terminate();
    sender.socket.terminate();
  });
  // Both are attached once each got the server's SyncStep1 (sent from the mailbox when the connection joins).
  await Promise.all([observer, sender].map(({ socket, frames }) => (frames.length > 0 ? undefined : new Promise((resolve) => socket.once('message', resolve)))));

  const doc = new Y.Doc();
  const updates: Uint8Array[] = [];
  doc.on('update', (update: Uint8Array) => updates.push(update));
  for (const word of ['one ', 'two ', 'three ', 'four ', 'five ']) doc.getText('content').insert(doc.getText('content').length, word);
  // Corked: the five frames leave in one TCP write, so the server reads them in one poll phase (one turn).
  const tcp = (sender.socket as unknown as { _socket: Socket })._socket;
  tcp.cork();
  for (const update of updates) sender.socket.send(updateFrame(update));
  tcp.uncork();

  const received = new Y.Doc();
  const updateFrames: Uint8Array[] = [];
  await new Promise<void>((resolve) => {
    const onFrame = (): void => {
      for (const frame of observer.frames.splice(0)) {
        const update = updateOf(frame);
        if (update === undefined) continue;
        updateFrames.push(update);
        Y.applyUpdate(received, update);
      }
      if (received.getText('content').toString() === doc.getText('content').toString()) {
        observer.socket.off('message', onFrame);
        resolve();
      }
    };
    observer.socket.on('message', onFrame);
    onFrame();
  });
  t.equal(updateFrames.length, 1, `five updates arrived in ${updateFrames.length} frame(s)`);
  t.equal(received.getText('content').toString(), 'one two three four five ');
  t.notOk(sender.frames.some((frame) => updateOf(frame) !== undefined), 'the sender got none of its own updates back');
});
