// Tests what large frames and slow readers cost the server: queued and shared instead of copied per socket, in order, in one piece, readers kept.
import t from 'tap';
import type WebSocket from 'ws';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, rawSocket, roomName, syncBase, synced, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';
import { parseExposition, sampleValue } from '../helpers/prometheus.js';

const MB = 1000 * 1000;

/** Counts a stock provider's closes (each one a reconnect and a resync of the whole document). */
function countCloses(client: Client): () => number {
  let closes = 0;
  client.provider.on('connection-close', () => closes++);
  return () => closes;
}

/**
 * A raw reader that applies every sync frame to its own document as it arrives and records whether any update came
 * before one it builds on (Yjs would keep it pending): with one writer appending, that is a frame out of order.
 */
function orderedReader(socket: WebSocket): { doc: Y.Doc; outOfOrder: () => number } {
  const doc = new Y.Doc();
  let outOfOrder = 0;
  socket.on('message', (data: Buffer) => {
    const decoder = decoding.createDecoder(new Uint8Array(data));
    if (decoding.readVarUint(decoder) !== 0) return;
    syncProtocol.readSyncMessage(decoder, encoding.createEncoder(), doc, 'server');
    if (doc.store.pendingStructs !== null) outOfOrder++;
  });
  return { doc, outOfOrder: () => outOfOrder };
}

async function metric(url: string, name: string): Promise<number> {
  return sampleValue(parseExposition(await (await fetch(`${url}/metrics`)).text()), name);
}

t.test('readers are not closed by one update larger than WS_MAX_BACKPRESSURE_BYTES: it is streamed to them', async (t) => {
  const room: Room = { organizationId: 'org', documentId: 'large', editorId: 'e' };
  const { api, url } = await startTestServer(t, { wsMaxBackpressureBytes: 1024 * 1024, apiKeyBytesPerSecond: 0 });
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const writer = connect(t, url, room, token);
  const readers = [connect(t, url, room, token), connect(t, url, room, token), connect(t, url, room, token)];
  await Promise.all([writer, ...readers].map(synced));
  const closes = readers.map(countCloses);
  const queuedBefore = await metric(url, 'plait_sync_frames_queued_total');

  // The readers stop reading while the update goes out, as readers on a slow network would: their sockets take little.
  const sockets = readers.map((reader) => reader.provider.ws as unknown as WebSocket);
  for (const socket of sockets) socket.pause();
  const publishedBefore = await metric(url, 'plait_sync_frames_published_total');
  const closedBefore = await metric(url, 'plait_sync_connections_closed_total');
  const text = 'x'.repeat(8 * MB);
  writer.text.insert(0, text);
  await waitForMetric(url, 'plait_sync_frames_published_total', (value) => value > publishedBefore);
  for (const socket of sockets) socket.resume();
  await whenDocs(readers.map((r) => r.doc), () => readers.every((r) => r.text.length === text.length));

  // The server ends a socket at once (its count moves then); the client sees the close only after the data before it.
  t.equal(await metric(url, 'plait_sync_connections_closed_total'), closedBefore, 'the server closed no reader (before: all three with 1013, the 8 MB frame in each buffer passing the 1 MiB limit)');
  t.same(closes.map((count) => count()), [0, 0, 0], 'no reader had to reconnect and resync');
  t.ok((await metric(url, 'plait_sync_frames_queued_total')) >= queuedBefore + readers.length, 'the frame was queued on each reader, not published through uWS');
});

t.test('frames published while a large frame is being written reach a reader after it, each whole', async (t) => {
  const room: Room = { organizationId: 'org', documentId: 'order', editorId: 'e' };
  const { api, url } = await startTestServer(t, { apiKeyBytesPerSecond: 0 });
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const writer = connect(t, url, room, token);
  await synced(writer);
  const { socket } = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`);
  t.teardown(() => socket.terminate());
  const reader = orderedReader(socket);
  let errors = 0;
  socket.on('error', () => errors++);

  // One 12 MB append (48 fragments) to a reader that has stopped reading, so the frame waits in its queue; then
  // 30 small appends in turns of their own, each building on the one before, published while it waits.
  socket.pause();
  writer.text.insert(0, 'y'.repeat(12 * MB));
  await waitForMetric(url, 'plait_sync_connections_queued', (value) => value === 1);
  const publishedBefore = await metric(url, 'plait_sync_frames_published_total');
  for (let i = 0; i < 30; i++) {
    writer.text.insert(writer.text.length, `${i},`);
    await waitForMetric(url, 'plait_sync_frames_published_total', (value) => value > publishedBefore + i);
  }
  const expected = writer.text.toString();
  socket.resume();
  await whenDocs([reader.doc], () => reader.doc.getText('content').length === expected.length);

  t.equal(reader.doc.getText('content').toString(), expected, 'the reader holds the writer\'s text');
  t.equal(reader.outOfOrder(), 0, 'no frame arrived before the one it builds on');
  t.equal(errors, 0, 'the client read every message as valid WebSocket framing (fragments uninterrupted)');
  t.equal(socket.readyState, socket.OPEN, 'the reader is still connected');
});

t.test('readers that do not read hold no copy of a large frame each; they get it whole once they read', async (t) => {
  const room: Room = { organizationId: 'org', documentId: 'paused', editorId: 'e' };
  const { api, url } = await startTestServer(t, { apiKeyBytesPerSecond: 0 });
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const writer = connect(t, url, room, token);
  await synced(writer);
  const paused = await Promise.all(Array.from({ length: 10 }, () => rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`)));
  // The server's join frames come first: wait for them, so what is held back afterwards is the update alone.
  await Promise.all(paused.map(({ socket, frames }) => new Promise<void>((resolve) => (frames.length > 0 ? resolve() : socket.once('message', () => resolve())))));
  for (const { socket } of paused) {
    t.teardown(() => socket.terminate());
    socket.pause();
  }

  writer.text.insert(0, 'z'.repeat(12 * MB));
  // The writer's frame is in once the server has applied it: wait for it to show as queued.
  const queued = await waitForMetric(url, 'plait_sync_connections_queued', (value) => value >= 1);
  const buffered = await metric(url, 'plait_sync_buffered_bytes');
  t.ok(queued >= 1, `sockets wait with frames queued (${queued})`);
  // Before, uWS copied the 12 MB frame into each of the ten buffers but what the kernel took: ~115 MB here.
  t.ok(buffered < 10 * 2 * 1024 * 1024, `uWS holds at most ~1.3 MiB a socket (${buffered} bytes for ten)`);

  const docs = paused.map(({ socket }) => {
    const doc = new Y.Doc();
    socket.on('message', (data: Buffer) => {
      const decoder = decoding.createDecoder(new Uint8Array(data));
      if (decoding.readVarUint(decoder) === 0) syncProtocol.readSyncMessage(decoder, encoding.createEncoder(), doc, 'server');
    });
    return doc;
  });
  // ws hands out what it read before the pause first; the rest arrives as the server's drains write it.
  for (const { socket, frames } of paused) {
    for (const frame of frames.splice(0)) socket.emit('message', Buffer.from(frame));
    socket.resume();
  }
  await whenDocs(docs, () => docs.every((doc) => doc.getText('content').length === 12 * MB));
  t.pass('every paused reader got the 12 MB update whole once it read');
  t.equal(await waitForMetric(url, 'plait_sync_connections_queued', (value) => value === 0), 0, 'each is back on its topic once its queue is written');
});

/** Scrapes until `ready` holds for the metric (the server's state moves a few turns after the client's). */
async function waitForMetric(url: string, name: string, ready: (value: number) => boolean): Promise<number> {
  for (;;) {
    const value = await metric(url, name);
    if (ready(value)) return value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
