// Tests stock y-websocket providers over /sync: 2 and 20 clients converge, late joiners (of a large document too), awareness lifecycle.
import t from 'tap';
import { JOIN_FRAME_MIN_BYTES } from '../../src/doc/join-state.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, twoEditors, userToken, whenDocs, type Client, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-1', documentId: 'doc-1', editorId: 'editor-1' };

const sameText = (clients: readonly Client[], length: number) => (): boolean =>
  clients.every((c) => c.text.length === length && c.text.toString() === clients[0]?.text.toString());

t.test('two y-websocket providers editing one text store concurrently converge', async (t) => {
  const { a, b } = await twoEditors(t, room);
  // Both edit before either has seen the other's change: a real concurrent edit.
  a.text.insert(0, 'hello ');
  b.text.insert(0, 'world ');
  a.text.insert(6, 'there ');
  await whenDocs([a.doc, b.doc], sameText([a, b], 18));
  t.equal(a.text.toString(), b.text.toString(), 'identical content');
  t.match(a.text.toString(), /hello/);
  t.match(a.text.toString(), /world/);
});

t.test('twenty providers converge, a late joiner receives the full state', async (t) => {
  const { api, url } = await startTestServer(t);
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const clients = Array.from({ length: 20 }, () => connect(t, url, room, token));
  await Promise.all(clients.map(synced));
  clients.forEach((client, i) => client.text.insert(0, String.fromCharCode(65 + i).repeat(3)));
  await whenDocs(
    clients.map((c) => c.doc),
    sameText(clients, 60),
  );
  const final = clients[0]?.text.toString() ?? '';
  t.ok(clients.every((c) => c.text.toString() === final), 'all twenty hold identical content');
  for (let i = 0; i < 20; i++) t.match(final, String.fromCharCode(65 + i).repeat(3));

  const late = connect(t, url, room, token);
  await synced(late);
  t.equal(late.text.toString(), final, 'the late joiner has everything after its first sync');
});

t.test('a joiner of a large document holds every change by the time its provider says synced', async (t) => {
  // Large enough for a kept join answer (src/doc/join-state.ts): the changes after it reach later joiners as Update
  // frames, which must all be applied when the provider fires 'sync' (the load generator counted them as live edits
  // seconds old when they came after the SyncStep2).
  const { url, token, a: writer, b: watcher } = await twoEditors(t, room);
  writer.text.insert(0, 'x'.repeat(2 * JOIN_FRAME_MIN_BYTES));
  await whenDocs([watcher.doc], () => watcher.text.length === writer.text.length);
  const first = connect(t, url, room, token);
  await synced(first);
  t.equal(first.text.length, 2 * JOIN_FRAME_MIN_BYTES, 'the first joiner has the state (and the server keeps the answer)');

  for (let i = 0; i < 5; i++) writer.text.insert(i * 1000, `edit ${i} `);
  writer.text.delete(10, 3);
  await whenDocs([watcher.doc], () => watcher.text.toString() === writer.text.toString());
  const late = connect(t, url, room, token);
  const atSync = new Promise<string>((resolve) => {
    // Read inside the handler: later frames of the same read are applied before a promise continuation runs.
    const onSync = (state: boolean): void => {
      if (state) resolve(late.text.toString());
    };
    late.provider.on('sync', onSync);
  });
  const text = await atSync;
  t.equal(text.length, writer.text.length, 'every change is there at the sync');
  t.equal(text, writer.text.toString(), 'the same text as the writer');
  t.equal(late.doc.store.pendingStructs, null, 'nothing left pending');
});

t.test('awareness states propagate and are removed when a client disconnects', async (t) => {
  const { url, token, a, b } = await twoEditors(t, room);
  const seen = (client: Client, clientId: number, present: boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (client.provider.awareness.getStates().has(clientId) !== present) return;
        client.provider.awareness.off('change', check);
        resolve();
      };
      client.provider.awareness.on('change', check);
      check();
    });
  a.provider.awareness.setLocalStateField('user', { name: 'Ada', cursor: 3 });
  await seen(b, a.doc.clientID, true);
  t.same(b.provider.awareness.getStates().get(a.doc.clientID), { user: { name: 'Ada', cursor: 3 } }, 'b sees a');

  // A third client joining later is sent the states already known to the server.
  const c = connect(t, url, room, token);
  await seen(c, a.doc.clientID, true);
  t.pass('a late joiner receives existing awareness');

  // A disconnect without a goodbye (socket dropped): the server removes a's state for everyone.
  const socket = a.provider.ws;
  t.ok(socket, 'a has a socket');
  a.provider.shouldConnect = false;
  (socket as unknown as { terminate(): void }).terminate();
  await Promise.all([seen(b, a.doc.clientID, false), seen(c, a.doc.clientID, false)]);
  t.notOk(b.provider.awareness.getStates().has(a.doc.clientID), 'removed at b');
  t.notOk(c.provider.awareness.getStates().has(a.doc.clientID), 'removed at c');
});
