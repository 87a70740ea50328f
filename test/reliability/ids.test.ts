// Tests issue 10 item 1: ids over LMDB's key limit are refused at the edges, and a store that cannot be written fails alone.
import { request as httpRequest } from 'node:http';
import t from 'tap';
import * as Y from 'yjs';
import { loadConfig } from '../../src/config.js';
import { EditorDoc, type EditorDocUpdates } from '../../src/doc/editor-doc.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { CLOSE } from '../../src/errors.js';
import { MAX_ID_BYTES } from '../../src/limits.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { Snapshots } from '../../src/store/snapshots.js';
import { UpdateLog } from '../../src/store/update-log.js';
import { FakeHub, FakePeer } from '../helpers/fake-peer.js';
import { startTestServer } from '../helpers/server.js';
import { rawSocket, syncBase, upgradeStatus, userToken } from '../helpers/sync.js';

/** The body of a refused WebSocket upgrade (ws hides it), read with a plain HTTP request carrying upgrade headers. */
function refusedUpgradeBody(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' },
    });
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      response.on('end', () => resolve(text));
    });
    request.on('upgrade', () => reject(new Error('the upgrade succeeded')));
    request.on('error', reject);
    request.end();
  });
}

const wide = '中'.repeat(256);

t.test('a sync upgrade whose ids exceed the byte limit is refused with 400 before any document is loaded', async (t) => {
  const { api, url, server } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  // The API key's default access type is public: any user token may open any document.
  const token = await userToken(api, credentials, []);
  const path = [wide, wide, wide].map(encodeURIComponent).join('/');
  t.equal(await upgradeStatus(`${syncBase(url)}/${path}?token=${token}`), 400);
  const body = JSON.parse(await refusedUpgradeBody(`${url}/sync/${path}?token=${token}`)) as { error: { status: string; message: string } };
  t.equal(body.error.status, 'INVALID_ARGUMENT');
  t.match(body.error.message, /organizationId path segment must be at most 512 bytes/);
  t.equal(server.services.documentActors.peek({ apiKey: credentials.apiKey, organizationId: wide, documentId: wide }), undefined, 'nothing loaded');
  // At the limit exactly (170 x 3 bytes = 510) it opens.
  const fits = '中'.repeat(170);
  const open = await rawSocket(`${syncBase(url)}/${[fits, fits, fits].map(encodeURIComponent).join('/')}?token=${token}`);
  open.socket.close();
  await open.ended;
});

t.test('REST ids over the byte limit: INVALID_ARGUMENT naming the field, on every kind of operation', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const calls: Array<[string, unknown, string]> = [
    ['/v2/crdt/add', { organizationId: wide, documentId: 'd', editorId: 'e', type: 'text', data: 'x' }, 'data.organizationId'],
    ['/v2/crdt/add', { organizationId: 'o', documentId: 'd', editorId: wide, type: 'text', data: 'x' }, 'data.editorId'],
    ['/v2/commentannotations/add', { organizationId: 'o', documentId: wide, commentAnnotations: [{ commentData: [{ commentText: 'x', from: { userId: 'u' } }] }] }, 'data.documentId'],
    ['/v2/presence/add', { organizationId: 'o', documentId: 'd', users: [{ userId: wide }] }, 'data.users[0].userId'],
    ['/v2/auth/generate_token', { userId: 'u', userProperties: { name: 'n', email: 'e@example.com' }, permissions: { resources: [{ type: 'document', id: wide, organizationId: 'o' }] } }, 'data.permissions.resources[0].id'],
    ['/v2/auth/permissions/add', { user: { userId: 'u' }, permissions: { resources: [{ type: 'document', id: wide, organizationId: 'o' }] } }, 'data.permissions.resources[0].id'],
  ];
  for (const [path, data, field] of calls) {
    const response = await api.call(credentials, path, data);
    t.equal(response.status, 400, `${path} ${field}: 400`);
    t.equal(response.body.error?.status, 'INVALID_ARGUMENT');
    t.equal(response.body.error?.message, `${field} must be at most ${MAX_ID_BYTES} bytes in UTF-8`, `${path} names ${field}`);
  }
  // Another tenant is unaffected, and the process still answers.
  const other = await api.createWorkspace();
  const added = await api.call(other, '/v2/crdt/add', { organizationId: 'o', documentId: 'd', editorId: 'e', type: 'text', data: 'fine' });
  t.equal(added.status, 200, 'another workspace writes');
  t.equal((await fetch(`${url}/v2/crdt/get`, { method: 'POST' })).status >= 400, true, 'the server still answers');
});

/** Records what the update log tells a store's owner. */
class Owner implements EditorDocUpdates {
  readonly failures: unknown[] = [];
  storeUpdated(): void {
    // The test appends by hand.
  }
  storeWriteFailed(_store: EditorDoc, error: unknown): void {
    this.failures.push(error);
  }
}

t.test('a store whose key LMDB refuses fails alone: the others of its commit land, and later commits are not poisoned', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const log = new UpdateLog(store, { groupCommitMs: 0, compactAfterUpdates: 1000, compactAfterBytes: 1 << 20 }, createLogger('silent'));
  const owner = new Owner();
  // Built directly, past the edge checks: an id written before the limits existed, or a future bug.
  const poisoned = new EditorDoc({ apiKey: 'key', organizationId: wide, documentId: wide }, wide);
  const healthy = new EditorDoc({ apiKey: 'key', organizationId: 'org', documentId: 'doc' }, 'main');
  for (const each of [poisoned, healthy]) each.listen(owner);
  const edit = (target: EditorDoc, text: string): Promise<void> => {
    const doc = new Y.Doc();
    doc.getText('content').insert(0, text);
    const update = Y.encodeStateAsUpdate(doc);
    Y.applyUpdate(target.doc, update);
    target.touch({ userId: 'u', sessionId: null }, Date.now());
    return log.append(target, update);
  };
  const bad = edit(poisoned, 'never stored');
  const good = edit(healthy, 'stored');
  await t.rejects(bad, 'the store that cannot be written is refused');
  await good;
  t.equal(owner.failures.length, 1, 'its owner is told once, to put memory back');
  await edit(healthy, 'again');
  await log.flush();
  const loaded = new Snapshots(store).load('key', 'org', 'doc');
  t.equal(loaded.length, 1);
  t.equal(loaded[0]?.updates.length, 2, 'both later commits of the healthy store landed');
});

t.test('a document whose key LMDB refuses: its write fails alone, its memory goes back to disk, its sockets close; others commit', async (t) => {
  const dir = t.testdir();
  const store = Store.open(dir);
  const hub = new FakeHub();
  const registry = new DocumentActors(loadConfig({}, [], { dataDir: dir, groupCommitMs: 50 }), store, createLogger('silent'), hub);
  t.teardown(async () => {
    await registry.shutdown();
    await store.close();
  });
  // Past the edge checks, as data from before the limits would be.
  const poisoned = { apiKey: 'key', organizationId: wide, documentId: wide };
  const healthy = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };
  const peer = new FakePeer('s1', 'u1', wide, hub);
  const lease = await registry.acquire(poisoned);
  t.teardown(() => lease.release());
  lease.actor.attach(peer);
  // Both writes land in the same commit window.
  const [bad, good] = await Promise.allSettled([
    lease.actor.add(wide, { type: 'text', data: 'never stored' }),
    registry.use(healthy, (actor) => actor.add('main', { type: 'text', data: 'stored' })),
  ]);
  t.equal(bad.status, 'rejected', 'the write that cannot be stored is refused');
  t.equal(good.status, 'fulfilled', 'the other document of the same commit is stored');
  await lease.actor.run(() => undefined);
  t.same(await lease.actor.records(), [], 'the refused document holds what disk holds: nothing');
  t.equal(peer.closedWith, CLOSE.INTERNAL, 'its connection is closed so the client resyncs');
  const again = await registry.use(healthy, (actor) => actor.update('main', { type: 'text', data: 'stored again' }).then(() => actor.records('main')));
  t.equal(again[0]?.data, 'stored again', 'later commits are not poisoned');
});

t.test('ids with U+0000-U+0004 are refused naming the field: a long one was stored under a key that read back as other parts', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  // ordered-binary escapes U+0000-U+0004 (its separator and type bytes) only in strings under 64 characters; a longer
  // id holding one was written raw, its key read back split (range deletes of its organization or document answered 500).
  const long = `${'q'.repeat(70)}\u0001`;
  const calls: Array<[string, unknown, string]> = [
    ['/v2/organizations/add', { organizations: [{ organizationId: long, organizationName: 'n' }] }, 'data.organizations[0].organizationId'],
    ['/v2/organizations/documents/add', { organizationId: 'o', documents: [{ documentId: long }], createOrganization: true }, 'data.documents[0].documentId'],
    ['/v2/users/add', { organizationId: 'o', users: [{ userId: '\u0000' }], createOrganization: true }, 'data.users[0].userId'],
    ['/v2/commentannotations/add', { organizationId: 'o', documentId: 'd', commentAnnotations: [{ annotationId: long, commentData: [{ commentText: 'x', from: { userId: 'u' } }] }] }, 'data.commentAnnotations[0].annotationId'],
    ['/v2/recordings/add', { organizationId: 'o', documentId: 'd', recordings: [{ annotationId: `\u0004${long}`, recordingType: 'audio', recordedTime: { duration: 1 }, attachments: [] }] }, 'data.recordings[0].annotationId'],
  ];
  for (const [path, data, field] of calls) {
    const response = await api.call(credentials, path, data);
    t.equal(response.status, 400, `${path} ${field}: 400`);
    t.equal(response.body.error?.message, `${field} has characters that are not allowed`, `${path} names ${field}`);
  }
  // Other control characters and long ids without those five stay accepted, and their organization deletes.
  const fine = `${'q'.repeat(70)}\u0005\u001f`;
  t.equal((await api.call(credentials, '/v2/organizations/documents/add', { organizationId: fine, documents: [{ documentId: fine }], createOrganization: true })).status, 200);
  t.equal((await api.call(credentials, '/v2/commentannotations/add', { organizationId: fine, documentId: fine, commentAnnotations: [{ annotationId: fine, commentData: [{ commentText: 'x', from: { userId: 'u' } }] }] })).status, 200);
  t.equal((await api.call(credentials, '/v2/organizations/documents/delete', { organizationId: fine, documentIds: [fine] })).status, 200, 'its document deletes');
  t.equal((await api.call(credentials, '/v2/organizations/delete', { organizationIds: [fine] })).status, 200, 'its organization deletes');
});
