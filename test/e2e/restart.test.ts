// Tests durability end to end: graceful restart, kill -9 mid-stream with the client restoring the rest, and every
// kind of REST data (directory, grants, API-key config, comments with their outbox events, presence) after SIGTERM and SIGKILL.
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import { Outbox } from '../../src/events/outbox.js';
import { Store } from '../../src/store/env.js';
import { ApiClient, type Credentials } from '../helpers/api.js';
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

const ORG = 'org-all';
const DOC = 'doc-all';
const inDoc = { organizationId: ORG, documentId: DOC };

/** Writes one of every kind of REST data; each write must be answered 200 (so it was committed). */
async function writeEveryKind(t: Test, api: ApiClient, credentials: Credentials): Promise<void> {
  const call = async (path: string, data: unknown): Promise<void> => {
    const response = await api.call(credentials, path, data);
    t.equal(response.status, 200, `${path} answered`);
  };
  await call('/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'restricted' });
  await call('/v2/organizations/add', { organizations: [{ organizationId: ORG, organizationName: 'All kinds' }] });
  await call('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'top', folderName: 'Top' }, { folderId: 'inner', parentFolderId: 'top' }] });
  await call('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'inner', documents: [{ documentId: DOC, documentName: 'Doc' }] });
  await call('/v2/users/add', { organizationId: ORG, users: [{ userId: 'ann', name: 'Ann', accessRole: 'viewer' }, { userId: 'bob' }] });
  await call('/v2/organizations/usergroups/add', { organizationId: ORG, organizationUserGroups: [{ groupId: 'eng', groupName: 'Engineering' }] });
  await call('/v2/organizations/usergroups/users/add', { organizationId: ORG, organizationUserGroupId: 'eng', userIds: ['bob'] });
  await call('/v2/auth/permissions/add', { organizationUserGroup: { organizationId: ORG, organizationUserGroupId: 'eng' }, permissions: { resources: [{ type: 'folder', id: 'top', organizationId: ORG, accessRole: 'editor' }] } });
  // Expires in a year (seconds): the expiry must come back as it went in.
  await call('/v2/auth/permissions/add', { user: { userId: 'ann' }, permissions: { resources: [{ type: 'document', id: DOC, organizationId: ORG, accessRole: 'editor', expiresAt: Math.floor(Date.now() / 1000) + 365 * 24 * 3600 }] } });
  await call('/v2/commentannotations/add', { ...inDoc, commentAnnotations: [{ annotationId: 'thread', commentData: [{ commentText: 'first', from: { userId: 'ann' } }] }] });
  await call('/v2/commentannotations/comments/add', { ...inDoc, annotationId: 'thread', commentData: [{ commentText: 'reply', from: { userId: 'bob' } }] });
  await call('/v2/commentannotations/comments/update', { ...inDoc, annotationId: 'thread', commentIds: [2], updatedData: { commentText: 'reply (edited)', from: { userId: 'bob' } } });
  await call('/v2/commentannotations/update', { ...inDoc, annotationIds: ['thread'], updatedData: { priority: { id: 'p1', name: 'High', color: '#f00', lightColor: '#fee' } } });
  await call('/v2/presence/add', { ...inDoc, users: [{ userId: 'ann', name: 'Ann' }, { userId: 'bob', status: 'away' }] });
}

/** Reads back every kind written above, through REST. */
async function readEveryKind(api: ApiClient, credentials: Credentials): Promise<Record<string, unknown>> {
  const read = async (path: string, data: unknown): Promise<unknown> => {
    const response = await api.call(credentials, path, data);
    return response.body.result?.data ?? response.body;
  };
  return {
    apiKeyConfig: await read('/v2/workspace/apikeyconfig/get', {}),
    organizations: await read('/v2/organizations/get', {}),
    folders: await read('/v2/organizations/folders/get', { organizationId: ORG }),
    documents: await read('/v2/organizations/documents/get', { organizationId: ORG }),
    users: await read('/v2/users/get', { organizationId: ORG }),
    groupMembers: await read('/v2/users/get', { organizationId: ORG, organizationUserGroupIds: ['eng'] }),
    permissions: await read('/v2/auth/permissions/get', { organizationId: ORG, userIds: ['ann', 'bob'], folderIds: ['top', 'inner'], documentIds: [DOC] }),
    threads: await read('/v2/commentannotations/get', inDoc),
    comments: await read('/v2/commentannotations/comments/get', { ...inDoc, annotationId: 'thread' }),
    presence: await read('/v2/presence/get', inDoc),
  };
}

/** The outbox as LMDB holds it, read while no server runs. */
async function outboxOf(dataDir: string): Promise<Array<{ type: string; seq: number }>> {
  const store = Store.open(dataDir);
  try {
    return new Outbox(store).read().map((event) => ({ type: event.type, seq: event.seq, documentId: event.documentId }));
  } finally {
    await store.close();
  }
}

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  t.test(`every kind of REST data answered before a ${signal} is there after the restart, comment events included`, async (t) => {
    const dataDir = t.testdir();
    // A long commit window: answered REST writes must not depend on it (they commit at once).
    const env = { DATA_DIR: dataDir, DEV_BOOTSTRAP: 'false', GROUP_COMMIT_MS: '1000' };
    const server = await startServerProcess(t, env);
    const api = new ApiClient(`http://127.0.0.1:${server.port}`);
    const credentials = await api.createWorkspace();
    await writeEveryKind(t, api, credentials);
    const before = await readEveryKind(api, credentials);
    t.match(before, {
      apiKeyConfig: { defaultDocumentAccessType: 'restricted' },
      groupMembers: [{ userId: 'bob' }],
      permissions: { ann: { documents: { [DOC]: { accessRole: 'editor', expiresAt: Number } } }, bob: { folders: { top: { accessRole: 'editor' } } } },
      comments: [{ commentText: 'first' }, { commentText: 'reply (edited)' }],
      presence: [{ userId: 'ann' }, { userId: 'bob', status: 'away' }],
    }, 'sanity: everything was written as asked');

    server.child.kill(signal);
    t.equal(await server.exited, signal === 'SIGTERM' ? 0 : 'SIGKILL', signal === 'SIGTERM' ? 'stopped cleanly' : 'killed');
    t.same(
      (await outboxOf(dataDir)).map((event) => event.type),
      ['comment_annotation.add', 'comment.add', 'comment.update', 'comment_annotation.priority_change'],
      'each answered comment write has its event in the outbox, in order',
    );

    const restarted = await startServerProcess(t, env);
    const after = await readEveryKind(new ApiClient(`http://127.0.0.1:${restarted.port}`), credentials);
    t.same(after, before, 'every read answers as before');
  });
}
