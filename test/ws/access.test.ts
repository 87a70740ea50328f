// Tests who may open /sync: refused upgrades (400/401/403/429), viewer read-only, grant expiry while connected.
import t from 'tap';
import type WebSocket from 'ws';
import { CLOSE } from '../../src/errors.js';
import type { ApiClient, Credentials } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, rawSocket, roomName, syncBase, synced, upgradeStatus, userToken, viewerOf, whenDocs, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-a', documentId: 'doc-a', editorId: 'main' };

t.test('upgrade is refused with 401 without a token or with a bad one, 403 without permission', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  // Documents are public to every user of the API key by default; restricted ones need an explicit grant.
  const restricted = await api.call(credentials, '/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'restricted' });
  t.equal(restricted.status, 200);
  const base = `${syncBase(url)}/${roomName(room)}`;
  t.equal(await upgradeStatus(base), 401, 'no token');
  t.equal(await upgradeStatus(`${base}?token=not-a-jwt`), 401, 'garbage token');
  const token = await userToken(api, credentials, [editorOf(room)]);
  const tampered = `${token.slice(0, -4)}${token.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
  t.equal(await upgradeStatus(`${base}?token=${tampered}`), 401, 'bad signature');
  const elsewhere = await userToken(api, credentials, [{ type: 'document', id: 'other-doc', organizationId: room.organizationId }]);
  t.equal(await upgradeStatus(`${base}?token=${elsewhere}`), 403, 'a grant on another document');
  t.equal(await upgradeStatus(`${syncBase(url)}/only/two?token=${token}`), 400, 'a path without three segments');
  t.equal(await upgradeStatus(`${base}?token=${token}&type=table`), 400, 'an unknown store type');
});

t.test("a viewer receives everything but its edits never reach the server or peers", async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const editor = connect(t, url, room, await userToken(api, credentials, [editorOf(room)]));
  const viewer = connect(t, url, room, await userToken(api, credentials, [viewerOf(room)]));
  await Promise.all([synced(editor), synced(viewer)]);
  editor.text.insert(0, 'from the editor');
  await whenDocs([viewer.doc], () => viewer.text.toString() === 'from the editor');
  t.pass('the viewer receives edits');

  viewer.text.insert(0, 'VIEWER ');
  // Ordering marker: the editor's next edit is applied after the viewer's frame, so once a later
  // observer has the marker, the server has already processed (and refused) the viewer's edit.
  editor.text.insert(editor.text.length, '!');
  const observer = connect(t, url, room, await userToken(api, credentials, [editorOf(room)]));
  await synced(observer);
  await whenDocs([observer.doc], () => observer.text.toString().endsWith('!'));
  t.equal(observer.text.toString(), 'from the editor!', 'server state has no viewer edit');
  await whenDocs([editor.doc], () => editor.text.toString() === 'from the editor!');
  t.equal(editor.text.toString(), 'from the editor!', 'the editor never received it');
  const records = await api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...room });
  t.same(records.body.result?.data.map((r) => r.data), ['from the editor!'], 'REST agrees');
});

/**
 * Documents are public to every user of the API key by default; these tests need grants to decide. Under
 * organizationPrivate an organization grant counts (restricted would skip it), a document grant overrides it.
 */
async function privateWorkspace(api: ApiClient): Promise<Credentials> {
  const credentials = await api.createWorkspace();
  await api.call(credentials, '/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'organizationPrivate' });
  return credentials;
}

t.test('the connection is closed with PERMISSION_REVOKED when the grant expires while connected', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await privateWorkspace(api);
  const expiresAt = Date.now() + 1500;
  const token = await userToken(api, credentials, [{ ...editorOf(room), expiresAt }]);
  const { ended } = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`);
  const end = await ended;
  t.equal(end.code, CLOSE.PERMISSION_REVOKED);
  t.ok(Date.now() >= expiresAt, 'not before the grant expired');
});

t.test('a document at its connection cap refuses the next upgrade with 429', async (t) => {
  const { api, url } = await startTestServer(t, { maxConnectionsPerDocument: 2 });
  const token = await userToken(api, await api.createWorkspace(), [editorOf(room)]);
  const base = `${syncBase(url)}/${roomName(room)}?token=${token}`;
  const open = await Promise.all([rawSocket(base), rawSocket(base)]);
  t.teardown(() => open.forEach(({ socket }) => socket.terminate()));
  t.equal(await upgradeStatus(base), 429);
  const other = `${syncBase(url)}/${roomName({ ...room, documentId: 'another' })}?token=${await userToken(api, await api.createWorkspace(), [editorOf({ ...room, documentId: 'another' })])}`;
  const { socket } = await rawSocket(other);
  t.pass('other documents are not affected');
  socket.terminate();
});

t.test('an API key at its connection cap refuses the next upgrade with 429, on any of its documents; other keys are not affected', async (t) => {
  const { api, url } = await startTestServer(t, { maxConnectionsPerKey: 2 });
  const credentials = await api.createWorkspace();
  const second = { ...room, documentId: 'doc-b' };
  const token = await userToken(api, credentials, [editorOf(room), editorOf(second)]);
  const at = (r: Room): string => `${syncBase(url)}/${roomName(r)}?token=${token}`;
  const open = await Promise.all([rawSocket(at(room)), rawSocket(at(second))]);
  t.teardown(() => open.forEach(({ socket }) => socket.terminate()));
  t.equal(await upgradeStatus(at(room)), 429, 'a third connection of the key');
  t.equal(await upgradeStatus(at({ ...room, documentId: 'doc-c' })), 429, 'on another of its documents too');
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.match(metrics, /plait_limit_refusals_total\{limit="sync_connections_per_key"\} 2\n/, 'both refusals are counted in /metrics');
  t.match(metrics, /plait_limit_refusals_total\{limit="agent_queue"\} 0\n/, 'every limit is exported, refused or not');
  const other = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${await userToken(api, await api.createWorkspace(), [editorOf(room)])}`);
  t.pass('another API key still connects');
  other.socket.terminate();
  // A closed connection gives its place back (the server learns of the close a moment after the client does).
  open[0]?.socket.close();
  await open[0]?.ended;
  let status = 0;
  let again: WebSocket | undefined;
  while (again === undefined) {
    try {
      again = (await rawSocket(at(room))).socket;
    } catch (error) {
      status = (error as { httpStatus?: number }).httpStatus ?? 0;
      if (status !== 429) throw error;
    }
  }
  again.terminate();
  t.pass('a place freed by a close is taken again');
});

t.test('when the deciding grant expires but another still grants the same role, the connection stays', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await privateWorkspace(api);
  const expiresAt = Date.now() + 1200;
  const organization = { type: 'organization' as const, id: room.organizationId, accessRole: 'editor' as const };
  const covered = await userToken(api, credentials, [organization, { ...editorOf(room), expiresAt: expiresAt - 200 }]);
  const bare = await userToken(api, credentials, [{ ...editorOf(room), expiresAt }]);
  const stays = connect(t, url, room, covered);
  await synced(stays);
  const { ended } = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${bare}`);
  t.equal((await ended).code, CLOSE.PERMISSION_REVOKED, 'the connection without another grant closes');
  t.ok(stays.provider.wsconnected, 'the one with an organization grant is still connected');
  stays.text.insert(0, 'still editing');
  const observer = connect(t, url, room, covered);
  await whenDocs([observer.doc], () => observer.text.toString() === 'still editing');
  t.pass('and its edits still land');
});
