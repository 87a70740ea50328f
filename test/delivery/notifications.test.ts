// Tests in-app notifications: delay and batch windows on a manual clock, preferences, and the notification operations.
import t from 'tap';
import { alice, bob, deliveryEnv, scope, threadBody, type DeliveryEnv } from './delivery-env.js';

interface Notification {
  id: string;
  notifyUsersByUserId: Record<string, boolean>;
  displayHeadlineMessageTemplate: string;
  displayHeadlineMessageTemplateData: Record<string, unknown>;
  notificationSourceData: { batch?: { count: number; scope: string } };
  readByUserIds: string[];
  timestamp: number;
}

async function forBob(env: DeliveryEnv): Promise<Notification[]> {
  return (await env.call<Notification[]>('/v1/notifications/get', { ...scope, userId: 'bob' })).data;
}

async function reply(env: DeliveryEnv, annotationId: string, text: string): Promise<void> {
  const res = await env.call('/v2/commentannotations/comments/add', { ...scope, annotationId, commentData: [{ commentText: text, from: alice }] });
  if (res.status !== 200) throw new Error(JSON.stringify(res));
}

t.test('a notification sent at once is written with the comment: no outbox row, nothing for the dispatcher', async (t) => {
  const env = await deliveryEnv(t);
  const { outbox } = env.running.services;
  await env.call('/v2/workspace/notificationconfig/update', { useNotificationService: true });
  await env.call('/v1/commentannotations/add', threadBody());
  t.same(outbox.read(), [], 'no delay, no batching, no other channel: the event gets no row');
  const [sent] = await forBob(env);
  t.same(sent?.notifyUsersByUserId, { bob: true, carol: true }, 'bob (mentioned) and carol (assigned) are notified before any dispatcher round');
  // With a channel the dispatcher plans for, the row names the recorder and the planner leaves it alone.
  await env.call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw' } });
  await reply(env, 'thread-1', 'again, @bob');
  t.same(outbox.read().map((event) => event.recordedBy), [['notification']]);
  await env.pump();
  t.equal((await forBob(env)).length, 2, 'one notification per event, none planned twice');
});

t.test('delayConfig holds a notification back exactly delaySeconds', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/notificationconfig/update', { useNotificationService: true, notificationServiceConfig: { delayConfig: { isEnabled: true, delaySeconds: 60 } } });
  await env.call('/v1/commentannotations/add', threadBody());
  t.same(env.running.services.outbox.read().map((event) => event.recordedBy), [undefined], 'a delayed notification is the dispatcher\'s: a row that names no recorder');
  await env.pump();
  t.same(await forBob(env), [], 'nothing yet');
  await env.advance(59_999);
  t.same(await forBob(env), [], 'nothing 1 ms early');
  await env.advance(1);
  t.equal((await forBob(env)).length, 1, 'there at delaySeconds');
});

t.test('document batching: one notification per window, flushed early at maxActivities', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/notificationconfig/update', {
    useNotificationService: true,
    notificationServiceConfig: { batchConfig: { document: { isEnabled: true, batchWindowSeconds: 30, maxActivities: 3 } } },
  });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  await env.advance(10_000);
  await reply(env, 'thread-1', 'and another thing');
  await env.pump();
  t.same(await forBob(env), [], 'the window is open');
  await env.advance(20_000);
  const first = await forBob(env);
  t.equal(first.length, 1, 'one notification when the window closes');
  t.match(first[0], { notificationSourceData: { batch: { count: 2, scope: 'document' } }, displayHeadlineMessageTemplate: '{actionUser} made {count} updates' });
  // A new window: three events reach maxActivities and flush without waiting.
  for (const text of ['one', 'two', 'three']) await reply(env, 'thread-1', text);
  await env.pump();
  const second = await forBob(env);
  t.equal(second.length, 2, 'flushed at maxActivities, before the window ends');
  t.ok(second.some((n) => n.notificationSourceData.batch?.count === 3));
});

t.test('user batching groups one user’s notifications across documents', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/notificationconfig/update', {
    useNotificationService: true,
    notificationServiceConfig: { batchConfig: { user: { isEnabled: true, batchWindowSeconds: 60, maxActivities: 10 } } },
  });
  await env.call('/v1/commentannotations/add', threadBody('a'));
  await env.call('/v1/commentannotations/add', { ...(threadBody('b') as object), documentId: 'doc2' });
  await env.pump();
  await env.advance(60_000);
  const all = (await env.call<Notification[]>('/v1/notifications/get', { organizationId: 'org1', userId: 'bob' })).data;
  t.equal(all.length, 1, 'one notification for bob across two documents');
  t.match(all[0], { notifyUsersByUserId: { bob: true }, notificationSourceData: { batch: { count: 2, scope: 'user' } } });
  const carol = (await env.call<Notification[]>('/v1/notifications/get', { organizationId: 'org1', userId: 'carol' })).data;
  t.equal(carol.length, 1, 'carol has her own batch');
});

t.test('inbox preference NONE or MINE filters in-app notifications', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/notificationconfig/update', { useNotificationService: true });
  const set = await env.call<Record<string, { success: boolean }>>('/v2/notifications/config/set', { organizationId: 'org1', userIds: ['carol'], config: { inbox: 'NONE' } });
  t.match(set.data, { carol: { success: true } });
  const got = await env.call<Array<{ config: { inbox: string; email: string } }>>('/v2/notifications/config/get', { organizationId: 'org1', userId: 'carol' });
  t.match(got.data, [{ config: { inbox: 'NONE', email: 'ALL' } }]);
  await env.call('/v2/notifications/config/set', { organizationId: 'org1', documentIds: ['doc1'], userIds: ['bob'], config: { inbox: 'MINE' } });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  const [notification] = (await env.call<Notification[]>('/v1/notifications/get', scope)).data;
  t.same(notification?.notifyUsersByUserId, { bob: true }, 'bob (mentioned) kept with MINE; carol (NONE) left out');
  // Dave only takes part (no mention, no assignment): MINE leaves him out, ALL keeps him.
  await env.call('/v2/commentannotations/comments/add', { ...scope, annotationId: 'thread-1', commentData: [{ commentText: 'me too', from: { userId: 'dave', name: 'Dave' } }] });
  await env.pump();
  await env.call('/v2/notifications/config/set', { organizationId: 'org1', userIds: ['dave'], config: { inbox: 'MINE' } });
  await reply(env, 'thread-1', 'plain reply');
  await env.pump();
  const daves = (await env.call<Notification[]>('/v1/notifications/get', { ...scope, userId: 'dave' })).data;
  t.equal(daves.length, 0, 'a participant with MINE gets nothing');
  t.equal((await forBob(env)).length, 3, 'bob, mentioned in the thread, still gets each one');
});

t.test('notification operations: add, get v1/v2 with paging, update read state, delete per id', async (t) => {
  const env = await deliveryEnv(t);
  const { call } = env;
  for (let i = 0; i < 3; i++) {
    env.clock.advance(1000);
    const added = await call('/v2/notifications/add', { ...scope, notificationId: `n-${i}`, actionUser: alice, displayHeadlineMessageTemplate: '{actionUser} pinged {recipientUser}', displayBodyMessage: `body ${i}`, notifyUsers: [bob] });
    t.equal(added.status, 200);
  }
  t.match((await call('/v2/notifications/add', { ...scope, notificationId: 'bad id!', actionUser: alice, displayHeadlineMessageTemplate: 'x', notifyUsers: [] })).error, { status: 'INVALID_ARGUMENT', message: /notificationId/ });
  t.match((await call('/v2/notifications/add', { ...scope, displayHeadlineMessageTemplate: 'x', notifyUsers: [] })).error, { status: 'INVALID_ARGUMENT', message: /actionUser is required/ });
  const v1 = await call<Notification[]>('/v1/notifications/get', { ...scope, userId: 'bob' });
  t.same(v1.data.map((n) => n.id), ['n-2', 'n-1', 'n-0'], 'newest first');
  t.same((await call<Notification[]>('/v1/notifications/get', { ...scope, userId: 'alice' })).data, [], 'not for alice');
  const page1 = await call<Notification[]>('/v2/notifications/get', { ...scope, pageSize: 2 });
  t.same(page1.data.map((n) => n.id), ['n-2', 'n-1']);
  t.type(page1.extra['pageToken'], 'string');
  const page2 = await call<Notification[]>('/v2/notifications/get', { ...scope, pageSize: 2, pageToken: page1.extra['pageToken'] });
  t.same(page2.data.map((n) => n.id), ['n-0']);
  t.equal(page2.extra['pageToken'], undefined, 'last page has no token');
  t.match((await call('/v2/notifications/get', { ...scope, notificationIds: Array.from({ length: 31 }, (_, i) => `x${i}`) })).error, { status: 'INVALID_ARGUMENT', message: /at most 30/ });
  const updated = await call<Record<string, { success: boolean; message: string }>>('/v2/notifications/update', { organizationId: 'org1', notifications: [{ id: 'n-0', readByUserIds: ['bob'] }, { id: 'missing', displayBodyMessage: 'x' }] });
  t.match(updated.data, { 'n-0': { success: true }, missing: { success: false } });
  t.same((await call<Notification[]>('/v1/notifications/get', { ...scope, notificationIds: ['n-0'] })).data[0]?.readByUserIds, ['bob']);
  const deleted = await call<Record<string, { success: boolean }>>('/v1/notifications/delete', { organizationId: 'org1', notificationIds: ['n-1', 'missing'] });
  t.match(deleted.data, { 'n-1': { success: true }, missing: { success: false } });
  t.same((await call<Notification[]>('/v1/notifications/get', scope)).data.map((n) => n.id), ['n-2', 'n-0']);
});

t.test('GDPR: a user’s notifications and activity logs are exported, and erased or anonymised', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/notificationconfig/update', { useNotificationService: true });
  await env.call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } });
  await env.call('/v2/notifications/add', { ...scope, notificationId: 'only-bob', actionUser: alice, displayHeadlineMessageTemplate: 'x', notifyUsers: [bob] });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  const exported = await env.call<{ notifications: unknown[]; activities: unknown[] }>('/v2/users/data/get', { userId: 'alice' });
  t.equal(exported.data.notifications.length, 2, 'both notifications alice made');
  t.equal(exported.data.activities.length, 1);
  t.equal((await env.call<{ notifications: unknown[] }>('/v2/users/data/get', { userId: 'bob' })).data.notifications.length, 2, 'bob is notified by both');
  const erase = await env.server.api.call(env.creds, '/v2/users/data/delete', { userId: 'bob' });
  t.equal(erase.status, 202);
  await env.running.services.jobs.idle();
  t.same((await env.call<Notification[]>('/v1/notifications/get', { ...scope, notificationIds: ['only-bob'] })).data, [], 'a notification only for bob is gone');
  // Erasing bob rewrote the thread (he was mentioned in it), an update carol is notified of at once: its recipients
  // are the thread's people, never the erased-user placeholder.
  const forCarol = (await env.call<Array<Notification & { notificationSourceData: { eventType?: string } }>>('/v1/notifications/get', { ...scope, userId: 'carol' })).data;
  const shared = forCarol.find((n) => n.notificationSourceData.eventType === 'comment_annotation.add');
  t.same(shared?.notifyUsersByUserId, { carol: true }, 'bob left the shared one');
  const update = forCarol.find((n) => n.notificationSourceData.eventType === 'comment_annotation.update');
  t.same(update?.notifyUsersByUserId, { alice: true, carol: true }, 'the placeholder is told nothing');
  t.same((await env.call<Notification[]>('/v1/notifications/get', { ...scope, userId: 'bob' })).data, [], 'a read filtered on bob finds neither (the time index follows the erase)');
  await env.server.api.call(env.creds, '/v2/users/data/delete', { userId: 'alice' });
  await env.running.services.jobs.idle();
  // Erasing bob rewrote the thread (he was in it), an update now logged too: alice's activity is the thread's add.
  const activities = (await env.call<Array<{ actionType: string; actionUser: { userId: string } }>>('/v2/activities/get', { organizationId: 'org1' })).data;
  const activity = activities.find((a) => a.actionType === 'comment_annotation.add');
  t.equal(activity?.actionUser.userId, 'erased-user', 'the activity stays, anonymised');
  const after = await env.call<{ notifications: unknown[]; activities: unknown[] }>('/v2/users/data/get', { userId: 'alice' });
  t.same([after.data.notifications, after.data.activities], [[], []]);
});
