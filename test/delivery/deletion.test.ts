// Tests that deleting a document, folder or organization over REST takes its notifications, activity logs, preferences and pending deliveries with it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { DB, type DbName } from '../../src/store/keys.js';
import { startReceiver } from '../helpers/receiver.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { alice, bob, deliveryEnv, threadBody, type DeliveryEnv } from './delivery-env.js';

interface Row {
  id: string;
  metadata: { documentId: string; organizationId: string };
}

const ORG = 'org1';

/** A thread on `documentId` by Alice mentioning Bob (so Bob gets a notification and an email). */
function thread(documentId: string, annotationId: string, organizationId = ORG): unknown {
  return { ...(threadBody(annotationId) as Record<string, unknown>), organizationId, documentId };
}

async function setUp(env: DeliveryEnv, channels: { delaySeconds?: number } = {}): Promise<void> {
  const ok = async (path: string, data: unknown): Promise<void> => {
    const res = await env.call(path, data);
    if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(res.error)}`);
  };
  await ok('/v2/workspace/notificationconfig/update', {
    useNotificationService: true,
    ...(channels.delaySeconds === undefined ? {} : { notificationServiceConfig: { delayConfig: { isEnabled: true, delaySeconds: channels.delaySeconds } } }),
  });
  await ok('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } });
  for (const organizationId of [ORG, 'org2']) {
    await ok('/v2/organizations/folders/add', { organizationId, folders: [{ folderId: 'f' }] });
    await ok('/v2/organizations/documents/add', { organizationId, documents: [{ documentId: 'doc1' }, { documentId: 'doc2' }] });
    await ok('/v2/organizations/documents/add', { organizationId, folderId: 'f', documents: [{ documentId: 'doc3' }] });
  }
}

/** Rows of one organization, by document. */
async function notificationDocs(env: DeliveryEnv, organizationId = ORG): Promise<string[]> {
  return (await env.running.services.delivery.notifications.find(env.creds.apiKey, { organizationId })).map((n) => n.metadata.documentId).sort();
}

async function activityDocs(env: DeliveryEnv, organizationId = ORG): Promise<string[]> {
  return (await env.running.services.delivery.activities.find(env.creds.apiKey, { organizationId })).map((a) => a.metadata.documentId).sort();
}

function storedPrefs(env: DeliveryEnv, organizationId: string, documentId: string): unknown {
  return env.running.services.delivery.notifications.storedPrefs(env.creds.apiKey, organizationId, 'bob', documentId);
}

t.test('deleting a document removes its notifications, activity logs and preferences; other documents keep theirs', async (t) => {
  const env = await deliveryEnv(t);
  const { call } = env;
  await setUp(env);
  for (const documentId of ['doc1', 'doc2']) t.equal((await call('/v1/commentannotations/add', thread(documentId, `t-${documentId}`))).status, 200);
  // Rows added over REST too: a custom notification, a custom activity, per-document preferences.
  for (const documentId of ['doc1', 'doc2']) {
    await call('/v2/notifications/add', { organizationId: ORG, documentId, actionUser: alice, displayHeadlineMessageTemplate: 'custom', notifyUsers: [bob] });
    await call('/v2/activities/add', { organizationId: ORG, documentId, activities: [{ featureType: 'custom', actionType: 'deploy', actionUser: alice, targetEntityId: documentId }] });
  }
  await call('/v2/notifications/config/set', { organizationId: ORG, userIds: ['bob'], documentIds: ['doc1', 'doc2'], config: { inbox: 'MINE' } });
  await call('/v2/notifications/config/set', { organizationId: ORG, userIds: ['bob'], config: { email: 'NONE' } });
  await env.pump();
  t.same(await notificationDocs(env), ['doc1', 'doc1', 'doc2', 'doc2'], 'a comment and a custom notification on each document');
  t.same(await activityDocs(env), ['doc1', 'doc1', 'doc2', 'doc2'], 'an event-made (immutable) and a custom activity on each');

  t.equal((await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc1'] })).status, 200);

  const listed = await call<Row[]>('/v1/notifications/get', { organizationId: ORG, documentId: 'doc1', userId: 'bob' });
  t.same(listed.data, [], 'Get Notifications finds none of the deleted document');
  t.same((await call<Row[]>('/v2/activities/get', { organizationId: ORG, documentId: 'doc1' })).data, [], 'Get Activities finds none of it, immutable ones included');
  t.same(await notificationDocs(env), ['doc2', 'doc2'], 'the other document keeps its notifications');
  t.same(await activityDocs(env), ['doc2', 'doc2'], 'and its activity logs');
  const rows = (name: DbName): number => Array.from(env.running.services.store.records<unknown>(name).getKeys()).length;
  t.same([rows(DB.activityTimes), rows(DB.notificationTimes)], [rows(DB.activities), rows(DB.notifications)], 'the time-index rows went with their records');
  t.equal(storedPrefs(env, ORG, 'doc1'), undefined, 'the deleted document’s preferences are gone');
  t.match(storedPrefs(env, ORG, 'doc2'), { inbox: 'MINE' }, 'the other document’s stay');
  t.match(storedPrefs(env, ORG, ''), { email: 'NONE' }, 'and so do the organization-level ones');
});

t.test('deliveries not yet made about a deleted document are not made: pending jobs cancel, undispatched events drop', async (t) => {
  const env = await deliveryEnv(t);
  const { call } = env;
  const { delivery, outbox } = env.running.services;
  await setUp(env, { delaySeconds: 60 });
  for (const documentId of ['doc1', 'doc2']) await call('/v1/commentannotations/add', thread(documentId, `t-${documentId}`));
  await env.pump();
  t.same(delivery.queue.pending().map((j) => j.documentId).sort(), ['doc1', 'doc2'], 'a delayed notification waits for each document');
  // An event of doc1 the dispatcher has not planned yet.
  await call('/v2/commentannotations/comments/add', { organizationId: ORG, documentId: 'doc1', annotationId: 't-doc1', commentData: [{ commentText: 'late, @bob', from: alice }] });
  t.equal(outbox.read().length, 1, 'one event waits in the outbox');

  t.equal((await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc1'] })).status, 200);
  t.same(outbox.read(), [], 'the deleted document’s undispatched event is dropped');
  await env.advance(60_000);
  const jobs = delivery.queue.list((j) => j.channel === 'notification');
  t.same(jobs.map((j) => [j.documentId, j.state, j.lastError ?? null]).sort(), [
    ['doc1', 'cancelled', 'its document was deleted'],
    ['doc2', 'delivered', null],
  ]);
  t.same(await notificationDocs(env), ['doc2'], 'only the other document’s notification was written');
  t.same(await activityDocs(env), ['doc2'], 'and the dropped event made no activity log');
});

t.test('emails and webhooks not yet sent about a deleted document are cancelled; the other document’s go out', async (t) => {
  const sink = await startSmtpSink(t);
  const basic = await startReceiver(t);
  const env = await deliveryEnv(t, { smtpUrl: sink.url });
  const { call } = env;
  const { delivery } = env.running.services;
  await setUp(env);
  await call('/v2/workspace/emailconfig/update', { useEmailService: true });
  await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${basic.url}/raw` } });
  for (const documentId of ['doc1', 'doc2']) await call('/v1/commentannotations/add', thread(documentId, `t-${documentId}`));
  await delivery.dispatcher.drain();
  t.equal(delivery.queue.pending().filter((j) => j.documentId === 'doc1').length, 3, 'doc1: an email to Bob and to Carol, a webhook');

  await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc1'] });
  await delivery.runner.drain();
  const outcome = delivery.queue.list((j) => j.channel !== 'notification').map((j) => `${j.documentId ?? ''} ${j.channel} ${j.state}`).sort();
  t.same(outcome, ['doc1 email cancelled', 'doc1 email cancelled', 'doc1 webhook cancelled', 'doc2 email delivered', 'doc2 email delivered', 'doc2 webhook delivered']);
  t.equal(sink.mails.length, 2, 'only the two emails about doc2 reached SMTP');
  t.same(basic.requests.map((r) => (JSON.parse(r.body) as { commentAnnotation: { annotationId: string } }).commentAnnotation.annotationId), ['t-doc2'], 'and only its webhook');
});

t.test('per-user batches lose the deleted document’s items; a delivered digest naming it goes', async (t) => {
  const env = await deliveryEnv(t);
  const { call } = env;
  await setUp(env);
  await call('/v2/workspace/notificationconfig/update', { notificationServiceConfig: { batchConfig: { user: { isEnabled: true, batchWindowSeconds: 60, maxActivities: 10 } } } });
  // Bob is mentioned in both threads; Carol is assigned the doc1 one, Dave the doc2 one.
  const dave = { userId: 'dave', name: 'Dave', email: 'dave@example.com' };
  await call('/v1/commentannotations/add', thread('doc1', 't-1'));
  const second = thread('doc2', 't-2') as { commentAnnotations: Array<Record<string, unknown>> };
  await call('/v1/commentannotations/add', { ...second, commentAnnotations: [{ ...second.commentAnnotations[0], assignedTo: dave }] });
  await env.pump();
  await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc1'] });
  await env.advance(60_000);
  const digest = (userId: string): Promise<Array<{ notificationSourceData: { batch: { count: number; items: Array<{ documentId: string }> } } }>> =>
    call<Array<{ notificationSourceData: { batch: { count: number; items: Array<{ documentId: string }> } } }>>('/v1/notifications/get', { organizationId: ORG, userId }).then((r) => r.data);
  const forBob = await digest('bob');
  t.same(forBob.map((n) => n.notificationSourceData.batch.items.map((i) => i.documentId)), [['doc2']], 'Bob’s digest is about doc2 only');
  t.same(await digest('carol'), [], 'Carol’s, all about doc1, was cancelled');
  t.equal((await digest('dave')).length, 1, 'Dave’s is untouched');

  // A digest already delivered that names a document goes when that document is deleted.
  for (const documentId of ['doc2', 'doc3']) await call('/v1/commentannotations/add', thread(documentId, `t-${documentId}-b`));
  await env.pump();
  await env.advance(60_000);
  t.equal((await digest('bob')).length, 2);
  await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc3'] });
  t.same((await digest('bob')).map((n) => n.notificationSourceData.batch.items.map((i) => i.documentId)), [['doc2']], 'the doc2+doc3 digest is gone, the doc2 one stays');
});

t.test('deleting a folder takes its documents’ rows; documents outside it keep theirs', async (t) => {
  const env = await deliveryEnv(t);
  const { call } = env;
  await setUp(env);
  for (const documentId of ['doc2', 'doc3']) await call('/v1/commentannotations/add', thread(documentId, `t-${documentId}`));
  await env.pump();
  t.same(await notificationDocs(env), ['doc2', 'doc3']);
  t.equal((await call('/v2/organizations/folders/delete', { organizationId: ORG, folderId: 'f' })).status, 200);
  t.same(await notificationDocs(env), ['doc2'], 'doc3 (in the folder) lost its notification');
  t.same(await activityDocs(env), ['doc2'], 'and its activity log');
});

t.test('deleting an organization removes all its delivery rows and cancels its pending deliveries; another organization is untouched', async (t) => {
  const env = await deliveryEnv(t);
  const { call } = env;
  const { delivery, store } = env.running.services;
  await setUp(env, { delaySeconds: 60 });
  for (const organizationId of [ORG, 'org2']) {
    await call('/v2/notifications/add', { organizationId, documentId: 'doc1', actionUser: alice, displayHeadlineMessageTemplate: 'custom', notifyUsers: [bob] });
    await call('/v1/commentannotations/add', thread('doc1', 't-1', organizationId));
    await call('/v2/notifications/config/set', { organizationId, userIds: ['bob'], config: { inbox: 'MINE' } });
  }
  await env.pump();
  const keysOf = (name: DbName, organizationId: string): number =>
    Array.from(store.records<unknown>(name).getKeys()).filter((k) => Array.isArray(k) && k[0] === env.creds.apiKey && k[1] === organizationId).length;
  const counts = (organizationId: string): number[] => [DB.notifications, DB.notificationTimes, DB.activities, DB.activityTimes, DB.notificationPrefs].map((name) => keysOf(name, organizationId));
  t.same(counts(ORG), [1, 1, 1, 1, 1], 'before: a custom notification and an activity log, each with its time-index row, a preference');
  const org2 = counts('org2');

  const deleted = await call<Record<string, { success: boolean }>>('/v2/organizations/delete', { organizationIds: [ORG] });
  t.match(deleted.data, { [ORG]: { success: true } });
  t.same(counts(ORG), [0, 0, 0, 0, 0], 'nothing of the organization is left, index rows included');
  t.same(counts('org2'), org2, 'the other organization keeps everything');
  t.same(delivery.queue.list().map((j) => [j.organizationId, j.state]).sort(), [
    ['org1', 'cancelled'],
    ['org2', 'pending'],
  ]);
  await env.advance(60_000);
  t.same(await notificationDocs(env), [], 'the cancelled notification is never written');
  t.equal((await notificationDocs(env, 'org2')).length, 2, 'the other organization’s is');
});

/** A webhook receiver that holds each request until released, to delete a document while a delivery is in flight. */
async function heldReceiver(t: Test): Promise<{ url: string; arrived: Promise<void>; release(status: number): void }> {
  let onArrive: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => (onArrive = resolve));
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      onArrive();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrived,
    release: (status) => {
      for (const res of held.splice(0)) {
        res.statusCode = status;
        res.end('held');
      }
    },
  };
}

t.test('a delivery in flight when its document is deleted settles cancelled: no retry follows', async (t) => {
  const receiver = await heldReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  const { delivery } = env.running.services;
  await setUp(env);
  await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const endpoint = await call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook`, filterTypes: ['comment_annotation.add'] });
  await call('/v1/commentannotations/add', thread('doc1', 't-1'));
  await delivery.dispatcher.drain();
  const running = delivery.runner.runDue();
  await receiver.arrived;
  t.equal((await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['doc1'] })).status, 200);
  receiver.release(500);
  await running;
  const [job] = delivery.queue.list((j) => j.channel === 'advancedWebhook');
  t.match(job, { state: 'cancelled', attempt: 1, lastError: 'its document was deleted' }, 'the failed attempt is counted, and no retry is scheduled');
  t.same(delivery.queue.pending(), []);
  const messages = await call<{ messages: Array<{ status: string; attempts: number }> }>('/v2/workspace/advancedwebhook/endpoints/messages/get', { endpointId: endpoint.data.id });
  t.same(messages.data.messages.map((m) => [m.status, m.attempts]), [['fail', 1]], 'the endpoint’s message log says it was not delivered, with its one attempt');
});
