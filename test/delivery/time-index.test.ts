import t from 'tap';
import { Secrets } from '../../src/auth/secrets.js';
import { ActivityStore, type ActivityFilter, type ActivityRecord } from '../../src/delivery/activity-store.js';
import { Endpoints, type MessageRecord } from '../../src/delivery/endpoints.js';
import { NotificationStore, type NotificationRecord } from '../../src/delivery/notification-store.js';
import { page } from '../../src/delivery/paging.js';
import { RECORD_PAGE_EXAMINE_ROWS, TimeIndexed } from '../../src/delivery/time-index.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { countRowsRead } from '../helpers/rows-read.js';

const API = 'key-1';

/** Deterministic pseudo-random numbers, so a failure replays. */
function numbers(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function activity(id: string, fields: { organizationId?: string; documentId: string; userId: string; timestamp: number; actionType?: string; targetEntityId?: string }): ActivityRecord {
  return {
    id,
    featureType: 'comment',
    actionType: fields.actionType ?? 'added',
    actionUser: { userId: fields.userId },
    ...(fields.targetEntityId === undefined ? {} : { targetEntityId: fields.targetEntityId }),
    displayMessageTemplate: '',
    displayMessageTemplateData: {},
    metadata: { apiKey: API, documentId: fields.documentId, organizationId: fields.organizationId ?? 'org-1' },
    timestamp: fields.timestamp,
    origin: 'api',
    immutable: false,
  };
}

function notification(id: string, fields: { documentId: string; users: string[]; timestamp: number; notifyAll?: boolean }): NotificationRecord {
  const users = Object.fromEntries(fields.users.map((u) => [u, true as const]));
  return {
    id,
    notificationSource: 'custom',
    notificationSourceData: {},
    actionUser: null,
    displayBodyMessage: '',
    displayHeadlineMessageTemplate: 'hi',
    displayHeadlineMessageTemplateData: {},
    metadata: { apiKey: API, documentId: fields.documentId, organizationId: 'org-1' },
    notifyUsers: users,
    notifyUsersByUserId: users,
    notifyAll: fields.notifyAll ?? false,
    readByUserIds: [],
    timestamp: fields.timestamp,
  };
}

/** Every page of a filter, following the tokens; fails the test if a token repeats (a loop). */
async function allPages(activities: ActivityStore, filter: ActivityFilter, pageSize: number, order: 'asc' | 'desc'): Promise<ActivityRecord[]> {
  const rows: ActivityRecord[] = [];
  const seen = new Set<string>();
  let token: string | undefined;
  do {
    const result = await activities.page(API, filter, { pageSize, pageToken: token, order });
    rows.push(...result.rows);
    token = result.pageToken;
    if (token !== undefined && seen.has(token)) throw new Error('a page token repeated');
    if (token !== undefined) seen.add(token);
  } while (token !== undefined);
  return rows;
}

t.test('pages walked through the time index hold what sorting every matching record gives, for each filter and order', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const activities = new ActivityStore(store);
  const random = numbers(7);
  const records: ActivityRecord[] = [];
  for (let i = 0; i < 400; i++) {
    // Few distinct timestamps, so many rows tie and the id decides their order.
    records.push(
      activity(`a${Math.floor(random() * 1e6)}-${i}`, {
        organizationId: random() < 0.2 ? 'org-2' : 'org-1',
        documentId: `doc-${Math.floor(random() * 4)}`,
        userId: `user-${Math.floor(random() * 3)}`,
        timestamp: 1_000 + Math.floor(random() * 40),
        actionType: random() < 0.5 ? 'added' : 'deleted',
        ...(random() < 0.3 ? { targetEntityId: 'target-1' } : {}),
      }),
    );
  }
  await store.transaction((tx) => {
    for (const record of records) activities.put(tx, record);
  });
  const filters: ActivityFilter[] = [
    { organizationId: 'org-1' },
    { organizationId: 'org-2' },
    { organizationId: 'org-1', documentId: 'doc-2' },
    { organizationId: 'org-1', userId: 'user-1', actionTypes: ['deleted'] },
    { organizationId: 'org-1', targetEntityId: 'target-1', featureTypes: ['comment'] },
    { organizationId: 'org-1', featureTypes: ['reaction'] },
    { organizationId: 'org-3' },
  ];
  const matches = (r: ActivityRecord, f: ActivityFilter): boolean =>
    r.metadata.organizationId === f.organizationId &&
    (f.documentId === undefined || r.metadata.documentId === f.documentId) &&
    (f.userId === undefined || r.actionUser.userId === f.userId) &&
    (f.actionTypes === undefined || f.actionTypes.includes(r.actionType)) &&
    (f.featureTypes === undefined || f.featureTypes.includes(r.featureType)) &&
    (f.targetEntityId === undefined || r.targetEntityId === f.targetEntityId);
  for (const filter of filters) {
    for (const order of ['asc', 'desc'] as const) {
      const expected = page(records.filter((r) => matches(r, filter)), { pageSize: 10_000, order }).rows.map((r) => r.id);
      for (const pageSize of [1, 7, 1000]) {
        t.same((await allPages(activities, filter, pageSize, order)).map((r) => r.id), expected, `${JSON.stringify(filter)} ${order}, pages of ${pageSize}`);
      }
    }
  }
  t.ok(page(records, { pageSize: 10_000 }).rows.length === 400, 'the reference saw every record');
});

t.test('a page reads only the records it returns, one more at most, however large the organization', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const rows = new TimeIndexed<ActivityRecord, { userId: string }>(store, {
    records: DB.activities,
    index: DB.activityTimes,
    summarize: (r) => ({ userId: r.actionUser.userId }),
    scopeOf: (r) => [r.metadata.apiKey, r.metadata.organizationId],
    timeOf: (r) => r.timestamp,
  });
  const scope = [API, 'org-1'] as const;
  await store.transaction((tx) => {
    for (let i = 0; i < 3000; i++) rows.put(tx, scope, activity(`a${i}`, { documentId: 'd', userId: i % 100 === 0 ? 'rare' : 'common', timestamp: i }));
  });
  let reads = 0;
  const get = rows.get.bind(rows);
  rows.get = (...args) => {
    reads++;
    return get(...args);
  };
  const first = await rows.page(scope, () => true, { pageSize: 20 });
  t.same(first.rows.map((r) => r.timestamp), Array.from({ length: 20 }, (_, i) => 2999 - i), 'the newest 20');
  t.ok(reads <= 21, `read ${reads} records for a page of 20 out of 3000`);
  reads = 0;
  const rare = await rows.page(scope, (s) => s.userId === 'rare', { pageSize: 5, order: 'asc' });
  t.same(rare.rows.map((r) => r.id), ['a0', 'a100', 'a200', 'a300', 'a400']);
  t.ok(reads <= 6, `a filter tested on the index rows read ${reads} records for a page of 5`);
  t.ok(rare.pageToken !== undefined, 'more rare rows follow');
});

t.test('a token stays a position: rows removed or added around it do not repeat or skip the rest', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const activities = new ActivityStore(store);
  await store.transaction((tx) => {
    for (let i = 0; i < 10; i++) activities.put(tx, activity(`a${i}`, { documentId: 'd', userId: 'u', timestamp: 100 + i }));
  });
  const first = await activities.page(API, { organizationId: 'org-1' }, { pageSize: 3 });
  t.same(first.rows.map((r) => r.id), ['a9', 'a8', 'a7']);
  // The row the token names goes, a newer row and an older one arrive.
  await activities.removeEach(API, 'org-1', ['a7']);
  await store.transaction((tx) => {
    activities.put(tx, activity('newer', { documentId: 'd', userId: 'u', timestamp: 500 }));
    activities.put(tx, activity('older', { documentId: 'd', userId: 'u', timestamp: 1 }));
  });
  const rest = await allPagesFrom(activities, first.pageToken);
  t.same(rest, ['a6', 'a5', 'a4', 'a3', 'a2', 'a1', 'a0', 'older'], 'the rest in order, the newer row not among them (it comes before the position)');
});

async function allPagesFrom(activities: ActivityStore, token: string | undefined): Promise<string[]> {
  const ids: string[] = [];
  let next = token;
  while (next !== undefined) {
    const result = await activities.page(API, { organizationId: 'org-1' }, { pageSize: 3, pageToken: next });
    ids.push(...result.rows.map((r) => r.id));
    next = result.pageToken;
  }
  return ids;
}

t.test('an activity written again under a new timestamp moves in the index; an update keeps its place', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const activities = new ActivityStore(store);
  await activities.addAll([activity('a', { documentId: 'd', userId: 'u', timestamp: 10 }), activity('b', { documentId: 'd', userId: 'u', timestamp: 20 })]);
  await activities.addAll([activity('a', { documentId: 'd', userId: 'u', timestamp: 30 })]);
  t.same((await activities.page(API, { organizationId: 'org-1' }, { pageSize: 10 })).rows.map((r) => [r.id, r.timestamp]), [['a', 30], ['b', 20]], 'once, at its new time');
  await activities.updateEach(API, 'org-1', [{ id: 'b', fields: { displayMessageTemplate: 'edited', timestamp: 99 } }]);
  const rows = (await activities.page(API, { organizationId: 'org-1' }, { pageSize: 10 })).rows;
  t.same(rows.map((r) => [r.id, r.timestamp, r.displayMessageTemplate]), [['a', 30, ''], ['b', 20, 'edited']], 'an update changes the fields, not the time');
});

t.test('a notification changed in place is found by what it is now', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const notifications = new NotificationStore(store);
  await notifications.add(notification('n1', { documentId: 'd', users: ['alice', 'bob'], timestamp: 1 }));
  await notifications.add(notification('n2', { documentId: 'd', users: [], timestamp: 2, notifyAll: true }));
  const forBob = async (): Promise<string[]> => (await notifications.page(API, { organizationId: 'org-1', userId: 'bob' }, { pageSize: 10 })).rows.map((n) => n.id);
  t.same(await forBob(), ['n2', 'n1']);
  await notifications.updateEach(API, 'org-1', [{ id: 'n1', change: (n) => ({ ...n, notifyUsers: { alice: true }, notifyUsersByUserId: { alice: true } }) }]);
  t.same(await forBob(), ['n2'], 'bob is no longer a recipient of n1');
  t.same((await notifications.find(API, { organizationId: 'org-1', notificationIds: ['n1', 'missing'] })).map((n) => n.id), ['n1'], 'by id, read directly');
  const removed = await notifications.removeEach(API, 'org-1', ['n2', 'missing']);
  t.same(removed, { n2: true, missing: false });
  t.same(await forBob(), []);
});

t.test('records of a directory written before the index (schema 3) are indexed once at start', async (t) => {
  const dir = t.testdir();
  const old = Store.open(dir);
  // As a schema-3 build wrote them: the records alone.
  await old.transaction(() => {
    for (let i = 0; i < 5; i++) old.records<ActivityRecord>(DB.activities).putSync([API, 'org-1', `a${i}`], activity(`a${i}`, { documentId: 'd', userId: 'u', timestamp: i }));
    old.records<NotificationRecord>(DB.notifications).putSync([API, 'org-1', 'n1'], notification('n1', { documentId: 'd', users: ['u'], timestamp: 1 }));
    old.records<MessageRecord>(DB.webhookMessages).putSync([API, 'ep_1', 'msg_1'], { id: 'msg_1', endpointId: 'ep_1', eventType: 'x', eventId: 'e1', body: '{}', createdAt: 5, status: 'success', attempts: [], resends: 0 });
    old.records<number>(DB.meta).putSync('schemaVersion', 3);
  });
  await old.close();

  const store = Store.open(dir);
  t.teardown(() => store.close());
  const activities = new ActivityStore(store);
  const notifications = new NotificationStore(store);
  t.same((await activities.page(API, { organizationId: 'org-1' }, { pageSize: 10 })).rows, [], 'before the build, the index holds nothing');
  t.equal(await activities.buildIndex(), 5);
  t.equal(await notifications.buildIndex(), 1);
  const endpoints = new Endpoints(store, Secrets.load(t.testdir(), undefined));
  t.equal(await endpoints.buildIndex(), 1);
  t.same((await endpoints.listMessages(API, 'ep_1', 10, 'success')).map((m) => m.id), ['msg_1'], 'a message is listed under the API key and endpoint of its stored key');
  t.same((await activities.page(API, { organizationId: 'org-1' }, { pageSize: 10 })).rows.map((r) => r.id), ['a4', 'a3', 'a2', 'a1', 'a0']);
  t.same((await notifications.page(API, { organizationId: 'org-1', userId: 'u' }, { pageSize: 10 })).rows.map((r) => r.id), ['n1']);
  t.equal(await activities.buildIndex(), 0, 'the second start builds nothing');
});

t.test('a directory that was fresh when opened is only marked: everything in it was written with its index rows', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  t.equal(store.foundSchemaVersion, undefined, 'a fresh directory');
  const activities = new ActivityStore(store);
  await activities.addAll([activity('a', { documentId: 'd', userId: 'u', timestamp: 1 })]);
  t.equal(await activities.buildIndex(), 0, 'nothing scanned');
  t.equal(store.records<unknown>(DB.meta).get('timeIndexBuilt:activity-times'), true, 'and marked');
  t.same((await activities.page(API, { organizationId: 'org-1' }, { pageSize: 10 })).rows.map((r) => r.id), ['a']);
});

t.test('an endpoint’s message log lists its newest messages, by status, without reading the rest; deleting the endpoint takes the index', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const endpoints = new Endpoints(store, Secrets.load(t.testdir(), undefined));
  const endpoint = await endpoints.create(API, { url: 'https://example.com/hook' }, 1);
  const message = (i: number): MessageRecord => ({ id: `msg_${i}`, endpointId: endpoint.id, eventType: 'comment_annotation.add', eventId: `e${i}`, body: '{}', createdAt: 1_000 + i, status: 'pending', attempts: [], resends: 0 });
  await store.transaction((tx) => {
    for (let i = 0; i < 50; i++) endpoints.putMessage(tx, API, message(i));
  });
  // Messages settle in any order, each keeping the time it was first written.
  await store.transaction((tx) => {
    for (const i of [3, 47, 48]) endpoints.putMessage(tx, API, { ...message(i), status: 'fail' });
    endpoints.putMessage(tx, API, { ...message(49), status: 'success' });
  });
  t.same((await endpoints.listMessages(API, endpoint.id, 3)).map((m) => [m.id, m.status]), [['msg_49', 'success'], ['msg_48', 'fail'], ['msg_47', 'fail']], 'newest first');
  t.same((await endpoints.listMessages(API, endpoint.id, 10, 'fail')).map((m) => m.id), ['msg_48', 'msg_47', 'msg_3'], 'a status filter follows each message’s current status');
  t.same((await endpoints.listMessages(API, endpoint.id, 2, 'pending')).map((m) => m.id), ['msg_46', 'msg_45']);
  await endpoints.remove(API, endpoint.id);
  t.same([DB.webhookMessages, DB.webhookMessageTimes].map((name) => Array.from(store.records<unknown>(name).getKeys()).length), [0, 0], 'the messages and their index rows went with the endpoint');
});

t.test('a page of activity logs or notifications examines at most RECORD_PAGE_EXAMINE_ROWS index rows, in chunks with turns of the event loop, then ends with a token that goes on', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const activities = new ActivityStore(store);
  const notifications = new NotificationStore(store);
  const total = RECORD_PAGE_EXAMINE_ROWS + 1500;
  await store.transaction((tx) => {
    // The one row the filter matches is the oldest: a newest-first walk reaches it last.
    for (let i = 0; i < total; i++) {
      activities.put(tx, activity(`a${i}`, { documentId: 'd', userId: i === 0 ? 'rare' : 'common', timestamp: i }));
      notifications.put(tx, notification(`n${i}`, { documentId: 'd', users: [i === 0 ? 'rare' : 'common'], timestamp: i }));
    }
  });
  // Counts the index rows each page walks, on the LMDB database the stores share with this test's Store.
  const index = store.records<unknown>(DB.activityTimes);
  const read = countRowsRead(index);

  let turned = false;
  setImmediate(() => (turned = true));
  const first = await activities.page(API, { organizationId: 'org-1', userId: 'nobody' }, { pageSize: 10 });
  t.ok(turned, 'the event loop turned while the page walked its chunks');
  t.same(first.rows, [], 'nothing matched in the rows examined');
  t.ok(first.pageToken !== undefined, 'a token: rows are left to examine');
  t.ok(read.count <= RECORD_PAGE_EXAMINE_ROWS + 2, `examined ${read.count} index rows of ${total}`);

  const found = await allPages(activities, { organizationId: 'org-1', userId: 'rare' }, 10, 'desc');
  t.same(found.map((r) => r.id), ['a0'], 'following the tokens finds the match behind the examined rows, once');
  t.same((await allPages(activities, { organizationId: 'org-1' }, 1000, 'asc')).length, total, 'an unfiltered walk still lists every row once');

  const ntf = await notifications.page(API, { organizationId: 'org-1', userId: 'rare' }, { pageSize: 10 });
  t.same(ntf.rows, [], 'notifications: the first page ends short of the match');
  const next = await notifications.page(API, { organizationId: 'org-1', userId: 'rare' }, { pageSize: 10, pageToken: ntf.pageToken });
  t.same(next.rows.map((r) => r.id), ['n0'], 'and the next one finds it');
  t.equal(next.pageToken, undefined, 'the last page has no token');
});
