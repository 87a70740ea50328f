// Tests GDPR export and erase: every feature's data about a user is exported, erased by a job (202), and a second export is empty.
import t from 'tap';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import type { JobRecord } from '../../src/tenant/jobs.js';
import type { Credentials } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ORG = 'org-gdpr';
const scope = { organizationId: ORG, documentId: 'doc-g' };
const dora = { userId: 'dora', name: 'Dora', email: 'dora@example.com' };
const other = { userId: 'otto', name: 'Otto', email: 'otto@example.com' };

type Export = { userId: string; directory: unknown[]; comments: Array<{ annotationId: string; involvement: string[]; comments: unknown[] }>; presence: unknown[]; recordings: unknown[] };

/** Dora in every feature: directory (profile, grants, group), threads in every role, presence, a recording; Otto beside her. */
async function seed(server: TestServer, credentials: Credentials): Promise<void> {
  const call = (path: string, data: unknown) => server.api.call(credentials, path, data);
  await call('/v2/users/add', { organizationId: ORG, users: [{ ...dora, team: 'red' }, other] });
  await call('/v2/users/add', { ...scope, users: [{ userId: 'dora', accessRole: 'viewer' }] });
  await call('/v2/organizations/usergroups/add', { organizationId: ORG, organizationUserGroups: [{ groupId: 'eng' }] });
  await call('/v2/organizations/usergroups/users/add', { organizationId: ORG, organizationUserGroupId: 'eng', userIds: ['dora', 'otto'] });
  await call('/v2/commentannotations/add', {
    ...scope,
    commentAnnotations: [
      { annotationId: 'by-dora', commentData: [{ commentText: 'dora wrote this', from: dora }] },
      { annotationId: 'for-dora', assignedTo: dora, commentData: [{ commentText: 'otto asks', from: other }] },
      { annotationId: 'otto-only', commentData: [{ commentText: 'nothing of dora', from: other }] },
    ],
  });
  await call('/v2/comments/add', { ...scope, annotationId: 'otto-only', commentData: [{ commentText: 'still nothing', from: other }] });
  await call('/v2/presence/add', { ...scope, users: [dora, other] });
  await call('/v2/recordings/add', { ...scope, recordings: [{ annotationId: 'rec', recordingType: 'screen', recordedTime: { duration: 1000 }, from: dora, attachments: [] }] });
}

t.test('export shows a user in every feature; erase is a 202 job; afterwards the export is empty and others are untouched', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  await seed(server, credentials);
  const exported = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora' });
  t.equal(exported.status, 200);
  const data = exported.body.result?.data;
  t.equal(data?.userId, 'dora');
  t.match(data?.directory, [{ organizationId: ORG, profile: { name: 'Dora', team: 'red' }, groups: ['eng'] }]);
  t.equal((data?.directory[0] as { grants: unknown[] }).grants.length, 2, 'organization and document grants');
  t.same(
    data?.comments.map((c) => [c.annotationId, c.involvement]),
    [['by-dora', ['author', 'commenter']], ['for-dora', ['assignee']]],
    'threads she wrote and was assigned; not the others',
  );
  t.same(data?.comments[0]?.comments.length, 1, 'her own comment texts');
  t.equal(data?.presence.length, 1);
  t.equal(data?.recordings.length, 1);
  t.equal(exported.body.result?.nextPageToken, undefined, 'one page');

  const erase = await server.api.call(credentials, '/v1/users/data/delete', { userId: 'dora' });
  t.equal(erase.status, 202, 'HTTP 202');
  const body = erase.body as unknown as { status: string; statusCode: number; data: { jobId: string; tasksCount: number }; result?: unknown };
  t.equal(body.result, undefined, 'no result wrapper (upstream shape)');
  t.equal(body.statusCode, 202);
  t.equal(body.data.tasksCount, 4, 'one task per feature');
  await server.server.services.jobs.idle();
  const status = await server.api.call<{ status: string; erased: Record<string, number> }>(credentials, '/v2/users/data/delete/status', { jobId: body.data.jobId });
  t.equal(status.body.result?.data.status, 'completed');
  t.same(status.body.result?.data.erased, { directory: 1, comments: 2, presence: 1, recordings: 1 });

  const after = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora' });
  t.same(after.body.result?.data, { userId: 'dora', directory: [], comments: [], presence: [], recordings: [] }, 'a second export shows nothing');
  const threads = await server.api.call<Array<{ annotationId: string; from: { userId: string }; assignedTo?: { userId: string } }>>(credentials, '/v2/commentannotations/get', scope);
  const byId = Object.fromEntries((threads.body.result?.data ?? []).map((a) => [a.annotationId, a]));
  t.equal(byId['by-dora']?.from.userId, 'erased-user', 'her thread stays, anonymised');
  t.equal(byId['for-dora']?.assignedTo?.userId, 'erased-user');
  const otto = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'otto' });
  t.equal(otto.body.result?.data.comments.length, 2, "another user's data is untouched");
  t.equal(otto.body.result?.data.directory.length, 1);
  const users = await server.api.call<Array<{ userId: string }>>(credentials, '/v2/users/get', { organizationId: ORG });
  t.same(users.body.result?.data.map((u) => u.userId), ['otto']);
});

t.test('exports page at 100 items per feature', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const commentAnnotations = Array.from({ length: 150 }, (_, i) => ({ annotationId: `t${String(i).padStart(3, '0')}`, commentData: [{ commentText: 'x', from: dora }] }));
  await server.api.call(credentials, '/v2/commentannotations/add', { ...scope, commentAnnotations });
  const first = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora' });
  t.equal(first.body.result?.data.comments.length, 100);
  const token = first.body.result?.nextPageToken;
  t.type(token, 'string');
  const second = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora', pageToken: token });
  t.equal(second.body.result?.data.comments.length, 50);
  t.equal(second.body.result?.nextPageToken, undefined);
  const stolen = await server.api.call(credentials, '/v2/users/data/get', { userId: 'otto', pageToken: token });
  t.equal(stolen.body.error?.status, 'INVALID_ARGUMENT', "one user's token does not page another's export");
});

t.test('an erase a crash left in progress finishes at the next start; unknown jobs are NOT_FOUND', async (t) => {
  const first = await startTestServer(t);
  const credentials = await first.api.createWorkspace();
  await seed(first, credentials);
  await first.server.stop();
  const store = Store.open(first.config.dataDir);
  const job: JobRecord = { jobId: 'erase-1', apiKey: credentials.apiKey, kind: 'user-data-erase', params: { userId: 'dora' }, status: 'in_progress', createdAt: 1, updatedAt: 1 };
  await store.transaction(() => store.records<JobRecord>(DB.jobs).putSync([credentials.apiKey, 'erase-1'], job));
  await store.close();
  const second = await first.restart();
  await second.server.services.jobs.idle();
  const status = await second.api.call<{ status: string }>(credentials, '/v2/users/data/delete/status', { jobId: 'erase-1' });
  t.equal(status.body.result?.data.status, 'completed');
  const after = await second.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora' });
  t.same(after.body.result?.data, { userId: 'dora', directory: [], comments: [], presence: [], recordings: [] });
  const unknown = await second.api.call(credentials, '/v2/users/data/delete/status', { jobId: 'nope' });
  t.equal(unknown.body.error?.status, 'NOT_FOUND');
  const missing = await second.api.call(credentials, '/v2/users/data/delete', {});
  t.match(missing.body.error?.message, /userId/);
});
