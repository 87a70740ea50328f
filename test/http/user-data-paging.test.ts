// Tests GDPR export paging at scale: pages resume where the last one stopped, the scan yields the event loop, tokens stay in their API key, and erase works in batches.
import t from 'tap';
import type { NotificationRecord } from '../../src/delivery/notification-store.js';
import { CHUNK_ROWS, WRITE_BATCH } from '../../src/store/chunked-scan.js';
import type { Credentials } from '../helpers/api.js';
import { EXPORT_GRANTS_PER_PAGE } from '../../src/tenant/directory/users.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

type Export = Record<string, unknown[]> & { userId: string };

/** `count` notifications in each of two organizations, every third one for dora (the others for otto). */
async function seedNotifications(server: TestServer, apiKey: string, count: number): Promise<string[]> {
  const { store, delivery } = server.server.services;
  const doras: string[] = [];
  await store.transaction((tx) => {
    for (const organizationId of ['org-a', 'org-b']) {
      for (let i = 0; i < count; i++) {
        const id = `${organizationId}-n${String(i).padStart(5, '0')}`;
        const userId = i % 3 === 0 ? 'dora' : 'otto';
        if (userId === 'dora') doras.push(id);
        const users = { [userId]: true as const };
        const record: NotificationRecord = {
          id,
          notificationSource: 'custom',
          notificationSourceData: {},
          actionUser: { userId: 'otto' },
          displayBodyMessage: '',
          displayHeadlineMessageTemplate: 'custom',
          displayHeadlineMessageTemplateData: {},
          metadata: { apiKey, organizationId, documentId: 'doc' },
          notifyUsers: users,
          notifyUsersByUserId: users,
          notifyAll: false,
          readByUserIds: [],
          timestamp: 1_000 + i,
        };
        delivery.notifications.put(tx, record);
      }
    }
  });
  return doras.sort();
}

async function exportAll(server: TestServer, credentials: Credentials, userId: string): Promise<Export[]> {
  const pages: Export[] = [];
  let token: unknown;
  do {
    const reply = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId, ...(token === undefined ? {} : { pageToken: token }) });
    const data = reply.body.result?.data;
    if (data === undefined) throw new Error(`export failed: ${JSON.stringify(reply.body)}`);
    pages.push(data);
    token = reply.body.result?.nextPageToken;
  } while (token !== undefined && pages.length < 100);
  return pages;
}

t.test('an export pages through thousands of items: every item once, in order, 100 a page, across chunk boundaries', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const count = CHUNK_ROWS * 2;
  const doras = await seedNotifications(server, credentials.apiKey, count);
  t.ok(doras.length > 1000, `${doras.length} notifications for dora among ${count * 2}`);
  await server.api.call(credentials, '/v2/users/add', { organizationId: 'org-a', users: [{ userId: 'dora', name: 'Dora' }] });

  const pages = await exportAll(server, credentials, 'dora');
  t.equal(pages.length, Math.ceil(doras.length / 100), 'one page per 100 notifications');
  const ids = pages.flatMap((page) => (page.notifications as NotificationRecord[]).map((n) => n.id));
  t.same(ids, doras, 'each of her notifications once, in key order, none of otto’s');
  t.ok(pages.slice(0, -1).every((page) => page.notifications?.length === 100), 'full pages until the last');
  t.equal(pages[0]?.directory?.length, 1, 'the directory feature is on the first page');
  t.ok(pages.slice(1).every((page) => page.directory?.length === 0), 'and a finished feature answers nothing on later pages');
});

t.test('a page-numbered token (made before cursors) still answers its page', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const doras = await seedNotifications(server, credentials.apiKey, 600);
  const legacy = Buffer.from(JSON.stringify({ userId: 'dora', page: 2 })).toString('base64url');
  const reply = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora', pageToken: legacy });
  t.same((reply.body.result?.data.notifications as NotificationRecord[]).map((n) => n.id), doras.slice(200, 300), 'items 200..299');
  const next = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora', pageToken: reply.body.result?.nextPageToken });
  t.same((next.body.result?.data.notifications as NotificationRecord[]).map((n) => n.id), doras.slice(300, 400), 'and its token goes on from there');
});

t.test('a token whose cursor names another API key, or is not a key, is refused', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const other = await server.api.createWorkspace();
  await seedNotifications(server, other.apiKey, 300);
  const forged = (cursor: unknown) => Buffer.from(JSON.stringify({ userId: 'dora', after: { notifications: cursor } })).toString('base64url');
  for (const cursor of [[other.apiKey, 'org-a', 'org-a-n00000'], ['', 'x'], 'org-a', [credentials.apiKey, { a: 1 }]]) {
    const reply = await server.api.call(credentials, '/v2/users/data/get', { userId: 'dora', pageToken: forged(cursor) });
    t.equal(reply.body.error?.status, 'INVALID_ARGUMENT', `refused: ${JSON.stringify(cursor)}`);
  }
  const own = await server.api.call<Export>(credentials, '/v2/users/data/get', { userId: 'dora', pageToken: forged([credentials.apiKey, '']) });
  t.same(own.body.result?.data.notifications, [], 'a cursor in its own API key reads only that key (which has none)');
});

t.test('the export scan yields the event loop between chunks', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  await seedNotifications(server, credentials.apiKey, CHUNK_ROWS * 2);
  let turned = false;
  setImmediate(() => (turned = true));
  const page = await server.server.services.userData.export(credentials.apiKey, 'nobody');
  t.ok(turned, 'a callback queued behind the export ran before the export answered');
  t.same(page.features.notifications, [], 'and the export found nothing of a user with nothing');
});

t.test('an erase of a user in more notifications than one batch changes every one of them', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const doras = await seedNotifications(server, credentials.apiKey, WRITE_BATCH * 2);
  t.ok(doras.length > WRITE_BATCH, 'more than one batch');
  const started = await server.api.call<{ jobId: string }>(credentials, '/v2/users/data/delete', { userId: 'dora' });
  const jobId = (started.body as unknown as { data: { jobId: string } }).data.jobId;
  await server.server.services.jobs.idle();
  const status = await server.api.call<{ status: string; erased: Record<string, number> }>(credentials, '/v2/users/data/delete/status', { jobId });
  t.equal(status.body.result?.data.status, 'completed');
  t.equal(status.body.result?.data.erased.notifications, doras.length, 'every one of hers counted');
  const left = Array.from(server.server.services.delivery.notifications.all(credentials.apiKey));
  t.equal(left.length, (WRITE_BATCH * 2 * 2) - doras.length, 'hers (she was the only recipient) are gone');
  t.ok(left.every((n) => n.notifyUsersByUserId.dora === undefined), 'none left addressed to her');
  const pages = await exportAll(server, credentials, 'dora');
  t.same(pages[0]?.notifications, [], 'a second export finds none');
});

t.test("a user's grants in one organization fill pages of EXPORT_GRANTS_PER_PAGE, not one item of every grant", async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const { users } = server.server.services.directory;
  const documents = Math.floor(EXPORT_GRANTS_PER_PAGE * 2.5);
  await users.add(credentials.apiKey, { organizationId: 'org-a' }, [{ userId: 'gus', name: 'Gus' }]);
  await users.add(credentials.apiKey, { organizationId: 'org-b' }, [{ userId: 'gus', name: 'Gus' }]);
  for (let start = 0; start < documents; start += 100) {
    await Promise.all(Array.from({ length: Math.min(100, documents - start) }, (_, i) => users.add(credentials.apiKey, { organizationId: 'org-a', documentId: `d${String(start + i).padStart(5, '0')}` }, [{ userId: 'gus' }])));
  }
  type Item = { organizationId: string; profile?: unknown; grants: Array<{ level: string; resourceId: string }>; groups: string[] };
  const pages = await exportAll(server, credentials, 'gus');
  const items = pages.flatMap((page) => page.directory as Item[]);
  const grantsPerPage = pages.map((page) => (page.directory as Item[]).reduce((sum, item) => sum + item.grants.length, 0));
  t.ok(grantsPerPage.every((count) => count <= EXPORT_GRANTS_PER_PAGE), `at most ${EXPORT_GRANTS_PER_PAGE} grants a page: ${grantsPerPage.join(', ')}`);
  const grants = items.flatMap((item) => item.grants.map((grant) => `${item.organizationId}/${grant.level}/${grant.resourceId}`));
  t.equal(grants.length, documents + 2, 'every grant: the documents and one organization grant in each organization');
  t.equal(new Set(grants).size, grants.length, 'each once');
  t.same(items.filter((item) => item.profile !== undefined).map((item) => item.organizationId), ['org-a', 'org-b'], 'the profile once per organization, on its first item');

  const started = await server.api.call<{ jobId: string }>(credentials, '/v2/users/data/delete', { userId: 'gus' });
  const jobId = (started.body as unknown as { data: { jobId: string } }).data.jobId;
  await server.server.services.jobs.idle();
  const status = await server.api.call<{ erased: Record<string, number> }>(credentials, '/v2/users/data/delete/status', { jobId });
  t.equal(status.body.result?.data.erased.directory, 2, 'the erase counts each organization once');
  t.same((await exportAll(server, credentials, 'gus'))[0]?.directory, [], 'and leaves nothing');
});
