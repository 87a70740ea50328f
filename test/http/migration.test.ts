// Tests documents/migrate: a document's text, comments, live state, directory entry and grants move to a new id, as a job that survives a crash.
import t from 'tap';
import { CLOSE } from '../../src/errors.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import type { JobRecord } from '../../src/tenant/jobs.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

const ORG = 'org-mig';
const oldRoom: Room = { organizationId: ORG, documentId: 'old-doc', editorId: 'main' };
const newRoom: Room = { ...oldRoom, documentId: 'new-doc' };

/** The job row of a migration of old-doc to new-doc that a crash left in progress (`progress`: how far it had come). */
function crashedMigration(apiKey: string, jobId: string, progress?: string): JobRecord {
  return {
    jobId,
    apiKey,
    kind: 'document-migration',
    params: { organizationId: ORG, documentId: 'old-doc', newDocumentId: 'new-doc' },
    status: 'in_progress',
    createdAt: 1,
    updatedAt: 1,
    ...(progress === undefined ? {} : { progress }),
  };
}

t.test('a migrated document opens under its new id with its text and comments; old sockets close with 4410', async (t) => {
  const { api, url, server } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  await api.call(credentials, '/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f1' }] });
  await api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, folderId: 'f1', documents: [{ documentId: 'old-doc', documentName: 'Plan' }] });
  await api.call(credentials, '/v2/users/add', { organizationId: ORG, documentId: 'old-doc', users: [{ userId: 'ann', accessRole: 'viewer' }] });
  await api.call(credentials, '/v2/commentannotations/add', {
    organizationId: ORG,
    documentId: 'old-doc',
    commentAnnotations: [{ annotationId: 'c1', commentData: [{ commentText: 'keep me', from: { userId: 'ann' } }] }],
  });
  await api.call(credentials, '/v2/livestate/broadcast', { organizationId: ORG, documentId: 'old-doc', liveStateDataId: 'mode', data: 'draw' });
  const writer = connect(t, url, oldRoom, await userToken(api, credentials, [editorOf(oldRoom), editorOf(newRoom)]));
  await synced(writer);
  writer.text.insert(0, 'text written before the move');
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    writer.provider.on('connection-close', (event) => {
      if (event !== null) resolve({ code: event.code, reason: event.reason });
    }),
  );
  // The edit has reached the server once another connection sees it.
  const observer = connect(t, url, oldRoom, await userToken(api, credentials, [editorOf(oldRoom)]));
  await whenDocs([observer.doc], () => observer.text.toString() === 'text written before the move');

  const started = await api.call<{ migrationId: string }>(credentials, '/v2/organizations/documents/migrate', { organizationId: ORG, documentId: 'old-doc', newDocumentId: 'new-doc' });
  t.equal(started.status, 200);
  const migrationId = started.body.result?.data.migrationId ?? '';
  t.match(migrationId, /^\w+$/);
  t.same(await closed, { code: CLOSE.DOCUMENT_MOVED, reason: 'moved to new-doc' }, 'connections of the old id are closed with 4410 naming the new id');
  await server.services.jobs.idle();
  const status = await api.call<{ migrationId: string; status: string }>(credentials, '/v2/organizations/documents/migrate/status', { organizationId: ORG, migrationId });
  t.same(status.body.result?.data, { migrationId, status: 'completed' });

  const reader = connect(t, url, newRoom, await userToken(api, credentials, [editorOf(newRoom)]));
  await whenDocs([reader.doc], () => reader.text.toString() === 'text written before the move');
  t.pass('the new id opens with the text');
  const comments = await api.call<Array<{ annotationId: string }>>(credentials, '/v2/commentannotations/get', { organizationId: ORG, documentId: 'new-doc' });
  t.same(comments.body.result?.data.map((a) => a.annotationId), ['c1'], 'comments moved');
  const oldComments = await api.call<unknown[]>(credentials, '/v2/commentannotations/get', { organizationId: ORG, documentId: 'old-doc' });
  t.same(oldComments.body.result?.data, [], 'nothing is left under the old id');
  const crdt = await api.call<unknown[]>(credentials, '/v2/crdt/get', { ...oldRoom });
  t.same(crdt.body.result?.data, [], 'no editor data under the old id');
  const docs = await api.call<Array<{ id: string; documentName: string }>>(credentials, '/v2/organizations/documents/get', { organizationId: ORG, folderId: 'f1' });
  t.same(docs.body.result?.data.map((d) => [d.id, d.documentName]), [['new-doc', 'Plan']], 'the directory entry moved, in its folder, with its name');
  const users = await api.call<Array<{ userId: string; accessRole: string }>>(credentials, '/v2/users/get', { organizationId: ORG, documentId: 'new-doc' });
  t.same(users.body.result?.data.map((u) => [u.userId, u.accessRole]), [['ann', 'viewer']], 'document grants moved');
});

t.test('bad migrations are refused before any job starts', async (t) => {
  const { api } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  await api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: 'a' }, { documentId: 'b' }] });
  const migrate = (body: Record<string, unknown>) => api.call(credentials, '/v2/organizations/documents/migrate', { organizationId: ORG, ...body });
  const same = await migrate({ documentId: 'a', newDocumentId: 'a' });
  t.equal(same.body.error?.status, 'INVALID_ARGUMENT');
  const missing = await migrate({ documentId: 'nope', newDocumentId: 'c' });
  t.equal(missing.body.error?.status, 'NOT_FOUND');
  t.match(missing.body.error?.message, /data\.documentId/);
  const taken = await migrate({ documentId: 'a', newDocumentId: 'b' });
  t.equal(taken.body.error?.status, 'ALREADY_EXISTS');
  t.match(taken.body.error?.message, /data\.newDocumentId/);
  const noNew = await migrate({ documentId: 'a' });
  t.match(noNew.body.error?.message, /newDocumentId/);
  const unknown = await api.call(credentials, '/v2/organizations/documents/migrate/status', { organizationId: ORG, migrationId: 'nope' });
  t.equal(unknown.body.error?.status, 'NOT_FOUND');
  const other = await api.createWorkspace();
  const started = await migrate({ documentId: 'a', newDocumentId: 'c' });
  const migrationId = (started.body.result?.data as { migrationId: string }).migrationId;
  const foreign = await api.call(other, '/v2/organizations/documents/migrate/status', { organizationId: ORG, migrationId });
  t.equal(foreign.body.error?.status, 'NOT_FOUND', "another API key cannot read the job");
});

t.test('a migration a crash left in progress finishes at the next start', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  await first.api.call(credentials, '/v2/crdt/add', { ...oldRoom, data: 'moved after a crash', type: 'text' });
  await first.api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: 'old-doc' }] });
  await first.server.stop();
  // What a SIGKILL after the job was recorded, and before its transaction committed, leaves behind.
  const store = Store.open(first.config.dataDir);
  const job = crashedMigration(credentials.apiKey, 'crashed-job');
  await store.transaction(() => store.records<JobRecord>(DB.jobs).putSync([credentials.apiKey, 'crashed-job'], job));
  await store.close();

  const second = await first.restart();
  await second.server.services.jobs.idle();
  const status = await second.api.call<{ status: string }>(credentials, '/v2/organizations/documents/migrate/status', { organizationId: ORG, migrationId: 'crashed-job' });
  t.equal(status.body.result?.data.status, 'completed');
  const moved = await second.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...newRoom });
  t.same(moved.body.result?.data.map((r) => r.data), ['moved after a crash']);

  // Run once more, as if the crash had come after the commit: it finds the work done and still completes.
  await second.server.stop();
  const again = Store.open(first.config.dataDir);
  await again.transaction(() => again.records<JobRecord>(DB.jobs).putSync([credentials.apiKey, 'crashed-job'], job));
  await again.close();
  const third = await second.restart();
  await third.server.services.jobs.idle();
  const rerun = await third.api.call<{ status: string }>(credentials, '/v2/organizations/documents/migrate/status', { organizationId: ORG, migrationId: 'crashed-job' });
  t.equal(rerun.body.result?.data.status, 'completed', 'idempotent');
  const still = await third.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...newRoom });
  t.same(still.body.result?.data.map((r) => r.data), ['moved after a crash']);
});

t.test('a migration a crash stopped between two writes finishes at the next start, its text and grants whole', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  await first.api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: 'old-doc' }] });
  await first.api.call(credentials, '/v2/crdt/add', { ...oldRoom, data: 'half moved', type: 'text' });
  await first.api.call(credentials, '/v2/users/add', { organizationId: ORG, documentId: 'old-doc', users: [{ userId: 'ann', accessRole: 'editor' }] });
  await first.server.stop();
  // What a SIGKILL between two writes leaves: the job begun (its progress recorded), the editor's metadata and
  // snapshot already under the new id, its update log, the grant and the directory entry still under the old one.
  const store = Store.open(first.config.dataDir);
  const job = crashedMigration(credentials.apiKey, 'half-job', 'moving');
  const movedByHand = await store.transaction(() => {
    let count = 0;
    store.records<JobRecord>(DB.jobs).putSync([credentials.apiKey, 'half-job'], job);
    for (const db of [store.records<unknown>(DB.editorDocMeta), store.binary(DB.docSnapshots)]) {
      const from = [credentials.apiKey, ORG, 'old-doc', 'main'];
      const value = db.get(from);
      if (value === undefined) continue;
      db.putSync([credentials.apiKey, ORG, 'new-doc', 'main'], value);
      db.removeSync(from);
      count++;
    }
    return count;
  });
  await store.close();
  t.equal(movedByHand, 2, 'the metadata and snapshot are under the new id, the rest under the old');

  const second = await first.restart();
  await second.server.services.jobs.idle();
  const status = await second.api.call<{ status: string }>(credentials, '/v2/organizations/documents/migrate/status', { organizationId: ORG, migrationId: 'half-job' });
  t.equal(status.body.result?.data.status, 'completed', 'the re-run takes the rows under the new id as its own');
  const moved = await second.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', { ...newRoom });
  t.same(moved.body.result?.data.map((r) => r.data), ['half moved'], 'the text is whole under the new id');
  const old = await second.api.call<unknown[]>(credentials, '/v2/crdt/get', { ...oldRoom });
  t.same(old.body.result?.data, [], 'nothing under the old id');
  const users = await second.api.call<Array<{ userId: string; accessRole: string }>>(credentials, '/v2/users/get', { organizationId: ORG, documentId: 'new-doc' });
  t.same(users.body.result?.data.map((u) => [u.userId, u.accessRole]), [['ann', 'editor']], 'the grant moved');
  const docs = await second.api.call<Array<{ id: string }>>(credentials, '/v2/organizations/documents/get', { organizationId: ORG });
  t.same(docs.body.result?.data.map((d) => d.id), ['new-doc'], 'the directory entry moved');
});
