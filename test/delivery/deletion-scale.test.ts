// Tests deleting a document of an organization with more notifications and activity logs than one scan chunk or write batch: exactly its rows go, and the scan yields the event loop.
import t from 'tap';
import type { ActivityRecord } from '../../src/delivery/activity-store.js';
import type { NotificationRecord } from '../../src/delivery/notification-store.js';
import { CHUNK_ROWS, WRITE_BATCH } from '../../src/store/chunked-scan.js';
import { DB, type DbName } from '../../src/store/keys.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ORG = 'org-big';
const DOCS = 4;

/** `perDocument` notifications and activity logs on each of doc0..doc3, and a document preference of one user on each. */
async function seed(server: TestServer, apiKey: string, perDocument: number): Promise<void> {
  const { store, delivery } = server.server.services;
  await store.transaction((tx) => {
    for (let d = 0; d < DOCS; d++) {
      const documentId = `doc${d}`;
      const metadata = { apiKey, organizationId: ORG, documentId };
      for (let i = 0; i < perDocument; i++) {
        const users = { bob: true as const };
        const note: NotificationRecord = {
          id: `n-${d}-${i}`,
          notificationSource: 'custom',
          notificationSourceData: {},
          actionUser: { userId: 'alice' },
          displayBodyMessage: '',
          displayHeadlineMessageTemplate: 'custom',
          displayHeadlineMessageTemplateData: {},
          metadata,
          notifyUsers: users,
          notifyUsersByUserId: users,
          notifyAll: false,
          readByUserIds: [],
          timestamp: 1_000 + i * DOCS + d,
        };
        delivery.notifications.put(tx, note);
        const log: ActivityRecord = {
          id: `a-${d}-${i}`,
          featureType: 'custom',
          actionType: 'x',
          actionUser: { userId: 'alice' },
          displayMessageTemplate: 'x',
          displayMessageTemplateData: {},
          metadata,
          timestamp: 1_000 + i * DOCS + d,
          origin: 'api',
          immutable: true,
        };
        delivery.activities.put(tx, log);
      }
    }
  });
  await delivery.notifications.setPrefs(apiKey, ORG, ['bob'], ['', ...Array.from({ length: DOCS }, (_, d) => `doc${d}`)], { inbox: 'MINE' });
}

function documentsOf(rows: Iterable<{ metadata: { documentId: string } }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of rows) counts[row.metadata.documentId] = (counts[row.metadata.documentId] ?? 0) + 1;
  return counts;
}

t.test('deleting one document of a large organization removes exactly its notifications, logs and preferences', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const { apiKey } = credentials;
  const perDocument = WRITE_BATCH + WRITE_BATCH / 2;
  await seed(server, apiKey, perDocument);
  await server.api.call(credentials, '/v2/organizations/documents/add', { organizationId: ORG, documents: Array.from({ length: DOCS }, (_, d) => ({ documentId: `doc${d}` })) });
  const { delivery, store } = server.server.services;
  t.ok(perDocument * DOCS > 2 * CHUNK_ROWS, 'the organization holds several scan chunks');

  const reply = await server.api.call(credentials, '/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc1'] });
  t.equal(reply.status, 200, 'the delete answers 200');
  const kept = { doc0: perDocument, doc2: perDocument, doc3: perDocument };
  t.same(documentsOf(delivery.notifications.all(apiKey)), kept, 'its notifications (more than a write batch) all went; the others stayed');
  t.same(documentsOf(delivery.activities.all(apiKey)), kept, 'and its activity logs, immutable ones too');
  const rows = (name: DbName): number => Array.from(store.records<unknown>(name).getKeys()).length;
  t.same([rows(DB.notificationTimes), rows(DB.activityTimes)], [rows(DB.notifications), rows(DB.activities)], 'the time-index rows went with their records');
  t.equal(delivery.notifications.storedPrefs(apiKey, ORG, 'bob', 'doc1'), undefined, 'its preference went');
  t.match(delivery.notifications.storedPrefs(apiKey, ORG, 'bob', 'doc2'), { inbox: 'MINE' }, 'another document’s stayed');
  t.match(delivery.notifications.storedPrefs(apiKey, ORG, 'bob', ''), { inbox: 'MINE' }, 'and the organization-level one');
});

t.test('the deletion scan yields the event loop between chunks, and answers what it removed', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  await seed(server, credentials.apiKey, CHUNK_ROWS);
  let turned = false;
  setImmediate(() => (turned = true));
  const removed = await server.server.services.delivery.documentData.deleteDocuments([{ apiKey: credentials.apiKey, organizationId: ORG, documentId: 'doc2' }]);
  t.ok(turned, 'a callback queued behind the deletion ran before it finished');
  t.same(removed, { notifications: CHUNK_ROWS, activities: CHUNK_ROWS, preferences: 1, events: 0, cancelled: 0 });
});
