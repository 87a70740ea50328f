// Tests durability end to end: graceful restart, and kill -9 mid-stream with the client restoring the rest.
// Every kind of REST data after SIGTERM and SIGKILL: restart-every-kind.test.ts (a file of its own, for its own time budget).
import t from 'tap';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import { ApiClient } from '../helpers/api.js';
import { startServerProcess } from '../helpers/process.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, roomName, syncBase, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-k', documentId: 'doc-k', editorId: 'main' };

t.test('a graceful restart keeps every store', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  const token = await userToken(first.api, credentials, [editorOf(room)]);
  const client = connect(t, first.url, room, token);
  await synced(client);
  client.text.insert(0, 'typed before the restart');
  const observer = connect(t, first.url, room, token);
  await whenDocs([observer.doc], () => observer.text.toString() === 'typed before the restart');
  await first.api.call(credentials, '/v2/crdt/add', { ...room, editorId: 'table', type: 'map', data: { rows: 2 } });
  client.provider.destroy();
  observer.provider.destroy();

  const second = await first.restart();
  const after = connect(t, second.url, room, token);
  await synced(after);
  t.equal(after.text.toString(), 'typed before the restart', 'the text store');
  const got = await second.api.call<Array<{ id: string; data: unknown }>>(credentials, '/v2/crdt/get', { organizationId: room.organizationId, documentId: room.documentId });
  t.same(
    got.body.result?.data.map((r) => [r.id, r.data]).sort(),
    [
      ['main', 'typed before the restart'],
      ['table', { rows: 2 }],
    ],
    'every store, through REST',
  );
});

t.test('kill -9 during a stream of edits: committed updates survive, the client restores the rest', async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, DEV_BOOTSTRAP: 'false', GROUP_COMMIT_MS: '5' };
  const server = await startServerProcess(t, env);
  const api = new ApiClient(`http://127.0.0.1:${server.port}`);
  const credentials = await api.createWorkspace();
  const token = await userToken(api, credentials, [editorOf(room)]);
  const client = connect(t, api.baseUrl, room, token);
  await synced(client);

  for (let i = 0; i < 100; i++) client.text.insert(client.text.length, 'c');
  const observer = connect(t, api.baseUrl, room, token);
  await whenDocs([observer.doc], () => observer.text.length === 100);
  // A REST write answers after its commit; the log commits in order, so everything applied before it is on disk.
  const marker = await api.call(credentials, '/v2/crdt/add', { ...room, editorId: 'marker', type: 'text', data: 'm' });
  t.equal(marker.status, 200);
  const committed = observer.text.toString();
  observer.provider.destroy();

  // Keep typing while the server dies: some of these reach it and are lost with it, some never leave.
  let typed = 0;
  const killed = server.exited;
  for (; typed < 300; typed++) {
    client.text.insert(client.text.length, 'u');
    if (typed === 150) server.child.kill('SIGKILL');
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(await killed, 'SIGKILL');
  client.provider.destroy();

  const restarted = await startServerProcess(t, env);
  const restartedUrl = `http://127.0.0.1:${restarted.port}`;
  const fresh = connect(t, restartedUrl, room, token);
  await synced(fresh);
  t.ok(fresh.text.toString().startsWith(committed), `the ${committed.length} committed characters are there`);
  t.ok(fresh.text.length <= committed.length + typed, 'nothing invented');
  t.comment(`the server kept ${fresh.text.length} of ${100 + typed} characters; the client brings back the rest`);

  // The original client reconnects with its own document: y-websocket's sync sends the server what it lacks.
  const resumed = new WebsocketProvider(syncBase(restartedUrl), roomName(room), client.doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: { token },
  });
  t.teardown(() => resumed.destroy());
  const expected = client.text.toString();
  await whenDocs([fresh.doc], () => fresh.text.toString() === expected);
  t.equal(fresh.text.length, 100 + typed, 'every character typed is back');
});
