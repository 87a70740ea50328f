// Tests notifications/delete with a filter over more rows than a scan chunk and more matches than a write batch: the same answer as a one-transaction delete, in batches, yielding the event loop.
import t from 'tap';
import type { NotificationRecord } from '../../src/delivery/notification-store.js';
import { CHUNK_ROWS, WRITE_BATCH } from '../../src/store/chunked-scan.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { countingTransactions } from '../helpers/store.js';

const ORG = 'org-n';
type Answer = Record<string, { success: boolean; message: string }>;

/** `count` notifications of ORG: on doc0..doc2 in turn, to bob, carol or everyone, every fifth at location L; and a few of another organization. */
async function seed(server: TestServer, apiKey: string, count: number): Promise<void> {
  const { store, delivery } = server.server.services;
  await store.transaction((tx) => {
    for (let i = 0; i < count + 6; i++) {
      const users = i % 3 === 2 ? {} : { [i % 3 === 0 ? 'bob' : 'carol']: true as const };
      const note: NotificationRecord = {
        id: `n${String(i).padStart(5, '0')}`,
        notificationSource: 'custom',
        notificationSourceData: {},
        actionUser: null,
        displayBodyMessage: '',
        displayHeadlineMessageTemplate: 'x',
        displayHeadlineMessageTemplateData: {},
        metadata: { apiKey, organizationId: i < count ? ORG : 'org-other', documentId: `doc${i % 3 === 1 ? 1 : i % 2 === 0 ? 0 : 2}` },
        notifyUsers: users,
        notifyUsersByUserId: users,
        notifyAll: i % 3 === 2,
        ...(i % 5 === 0 ? { locationId: 'L' } : {}),
        readByUserIds: [],
        // Not in id order: the answer lists oldest first.
        timestamp: 10_000 - (i % 100) * 50 + i,
      };
      delivery.notifications.put(tx, note);
    }
  });
}

t.test('a filtered delete answers and removes exactly what a one-transaction delete of the matches did', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const { apiKey } = credentials;
  const { delivery, store } = server.server.services;
  const total = CHUNK_ROWS * 2 + WRITE_BATCH + 50;
  await seed(server, apiKey, total);
  const filters = [
    { userId: 'bob' },
    { documentId: 'doc1', locationId: 'L' },
    { documentId: 'doc0', userId: 'carol' },
    { documentId: 'nowhere' },
    { notificationIds: ['n00003', 'n00001', 'gone', 'n00006'], userId: 'bob' },
    {},
  ];
  for (const filter of filters) {
    const before = Array.from(delivery.notifications.all(apiKey, ORG)).map((n) => n.id);
    // The old reading: every match, oldest first, then each named id that did not match.
    const matching = (await delivery.notifications.find(apiKey, { organizationId: ORG, ...filter })).map((n) => n.id);
    const missing = (filter.notificationIds ?? []).filter((id) => !matching.includes(id));
    const { result: reply, transactions } = await countingTransactions(store, () => server.api.call<Answer>(credentials, '/v2/notifications/delete', { organizationId: ORG, ...filter }));
    const data = reply.body.result?.data ?? {};
    t.same(Object.keys(data), [...matching, ...missing], `${JSON.stringify(filter)}: one entry per match, oldest first, then the unknown ids`);
    t.ok(matching.every((id) => data[id]?.success === true && data[id]?.message === 'Notification deleted.'), 'every match deleted');
    t.ok(missing.every((id) => data[id]?.success === false && data[id]?.message === 'Failed to delete notification: not found.'), 'every other named id not found');
    t.equal(transactions, Math.ceil(matching.length / WRITE_BATCH), `in ${Math.ceil(matching.length / WRITE_BATCH)} bounded transactions`);
    const gone = new Set(matching);
    t.same(Array.from(delivery.notifications.all(apiKey, ORG)).map((n) => n.id), before.filter((id) => !gone.has(id)), 'the rest of the organization stays');
    const { notificationIds: _named, ...walked } = filter;
    t.same((await delivery.notifications.page(apiKey, { organizationId: ORG, ...walked }, { pageSize: total })).rows.filter((n) => gone.has(n.id)), [], 'and the time index has no row of them');
  }
  t.equal(Array.from(delivery.notifications.all(apiKey, 'org-other')).length, 6, 'another organization is untouched');
  t.same(Array.from(delivery.notifications.all(apiKey, ORG)), [], 'the unfiltered delete emptied the organization');
});

t.test('the filtered scan yields the event loop between chunks; a notification changed meanwhile is re-checked', async (t) => {
  const server = await startTestServer(t);
  const credentials = await server.api.createWorkspace();
  const { apiKey } = credentials;
  const { delivery } = server.server.services;
  await seed(server, apiKey, CHUNK_ROWS * 3);
  const onDoc2 = (await delivery.notifications.find(apiKey, { organizationId: ORG, documentId: 'doc2' })).map((n) => n.id);
  let turned = false;
  setImmediate(() => (turned = true));
  const removed = await delivery.notifications.removeMatching(apiKey, { organizationId: ORG, documentId: 'doc2' });
  t.ok(turned, 'a callback queued behind the delete ran before it answered');
  t.same(Object.keys(removed), onDoc2, 'it removed doc2’s notifications');
  t.ok(onDoc2.length > 0 && Object.values(removed).every(Boolean), 'each of them, counted');

  const bobs = (await delivery.notifications.find(apiKey, { organizationId: ORG, userId: 'bob' })).filter((n) => !n.notifyAll).map((n) => n.id);
  const kept = bobs[0] ?? '';
  // As if carol had become its only recipient between the scan and its batch.
  const answer = await delivery.notifications.removeEach(apiKey, ORG, bobs, (n) => n.id !== kept);
  t.equal(answer[kept], false, 'the batch re-checks each notification: one that no longer matches is kept');
  t.ok(delivery.notifications.get(apiKey, ORG, kept) !== undefined, 'and is still stored');
  t.equal(Object.values(answer).filter(Boolean).length, bobs.length - 1, 'the others went');
});
