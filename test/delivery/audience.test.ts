// Tests which comment events are written to the outbox: only those a delivery channel of the API key acts on, as configured when they commit.
import t from 'tap';
import { DB } from '../../src/store/keys.js';
import type { OutboxEvent } from '../../src/events/types.js';
import type { ActivityConfig } from '../../src/tenant/delivery-configs.js';
import { alice, deliveryEnv, scope, threadBody } from './delivery-env.js';

interface Activity {
  actionType: string;
  targetEntityId: string;
}

t.test('an event no channel wants is not written; a channel acts on the events committed while it is configured', async (t) => {
  const env = await deliveryEnv(t);
  const { call, running } = env;
  const { outbox } = running.services;
  const apiKey = env.creds.apiKey;
  const types = (): string[] => outbox.read().map((event) => event.type);
  const reply = (annotationId: string, text: string): unknown => ({ ...scope, annotationId, commentData: [{ commentText: text, from: alice }] });

  t.equal((await call('/v1/commentannotations/add', threadBody('t1'))).status, 200);
  t.same(types(), [], 'no channel configured: the thread is stored, its event is not');
  t.equal(outbox.wants(apiKey, 'comment_annotation.add'), false);
  t.equal(outbox.wants(apiKey, 'comment.add'), false, 'asked, and the answer kept');

  // Activity logs for every comment event but new threads.
  const enabled = await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true, triggers: { comment: { 'comment_annotation.add': false } } } });
  t.equal(enabled.status, 200, JSON.stringify(enabled.error));
  t.equal(outbox.wants(apiKey, 'comment.add'), true, 'the answer kept before the config changed was dropped');
  t.equal(outbox.wants(apiKey, 'comment_annotation.add'), false, 'a trigger turned off is not wanted');
  t.equal((await call('/v1/commentannotations/add', threadBody('t2'))).status, 200);
  t.equal((await call('/v2/commentannotations/comments/add', reply('t1', 'a reply'))).status, 200);
  // The activity log is written with the comment (Outbox.raise): the event needs no outbox row and no dispatcher round.
  t.same(types(), [], 'an event only the activity log acts on gets no outbox row');
  const activities = async (): Promise<string[]> =>
    (await call<Activity[]>('/v2/activities/get', { organizationId: scope.organizationId, featureTypes: ['comment'] })).data.map((a) => `${a.actionType} ${a.targetEntityId}`);
  t.same(await activities(), ['comment.add t1'], 'logged at once, before any dispatcher round; the thread added before the config was not');

  // Logged when it commits: a config disabled afterwards does not take it back.
  t.equal((await call('/v2/commentannotations/comments/add', reply('t2', 'second reply'))).status, 200);
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: false } })).status, 200);
  t.same((await activities()).sort(), ['comment.add t1', 'comment.add t2'], 'still logged');
  t.equal((await call('/v2/commentannotations/comments/add', reply('t2', 'third reply'))).status, 200);
  t.same(types(), [], 'disabled: not written either');
  t.equal((await activities()).length, 2, 'nor logged');

  // With a channel the dispatcher plans for (basic webhooks), the event gets its row, marked as recorded already.
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } })).status, 200);
  t.equal((await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw' } })).status, 200);
  t.equal((await call('/v2/commentannotations/comments/add', reply('t1', 'fourth reply'))).status, 200);
  t.same(outbox.read().map((event) => [event.type, event.recordedBy]), [['comment.add', ['activity']]], 'one row, its activity recorded');
  t.equal((await activities()).length, 3, 'logged with the comment');
  await env.pump();
  t.equal((await activities()).length, 3, 'the dispatcher does not log it again');
});

t.test('answers are kept until the configs change: a row written past the config store is seen only after `changed()`', async (t) => {
  const env = await deliveryEnv(t);
  const { outbox, store, delivery } = env.running.services;
  const apiKey = env.creds.apiKey;
  t.equal(outbox.wants(apiKey, 'comment.add'), false);
  // What a cluster node's applier does: write the row itself, then say which databases changed (src/replicated-caches.ts).
  const config: ActivityConfig = { isEnabled: true, triggers: { comment: { 'comment.add': true } } };
  await store.transaction(() => void store.records<ActivityConfig>(DB.deliveryConfigs).put([apiKey, 'activity'], config));
  t.equal(outbox.wants(apiKey, 'comment.add'), false, 'the kept answer');
  delivery.configs.changed();
  t.equal(outbox.wants(apiKey, 'comment.add'), true, 'asked again');
  t.equal(outbox.wants(apiKey, 'comment.update'), false, 'per event type');
  t.equal(outbox.wants('another-key', 'comment.add'), false, 'per API key');
});

t.test('an outbox row raised before the recorders existed (no `recordedBy`) is logged by the dispatcher, once', async (t) => {
  const env = await deliveryEnv(t);
  const { call, running } = env;
  const { outbox, store } = running.services;
  const activities = async (): Promise<string[]> =>
    (await call<Array<{ id: string }>>('/v2/activities/get', { organizationId: scope.organizationId, featureTypes: ['comment'] })).data.map((a) => a.id);
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } })).status, 200);
  t.equal((await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw' } })).status, 200);
  t.equal((await call('/v1/commentannotations/add', threadBody('t1'))).status, 200);
  const [raised] = outbox.read();
  t.same(raised?.recordedBy, ['activity']);
  // What an older build left in the outbox: the same event appended as a plain row, its activity not written.
  const legacy = raised as OutboxEvent;
  await store.transaction((tx) => void outbox.append(tx, { type: legacy.type, apiKey: legacy.apiKey, organizationId: legacy.organizationId, documentId: legacy.documentId, data: legacy.data }, Date.now()));
  t.equal(outbox.read()[1]?.recordedBy, undefined, 'a plain row names no recorder');
  t.equal((await activities()).length, 1, 'only the raised event is logged before planning');
  await env.pump();
  t.same(outbox.read(), [], 'both planned and acked');
  const logged = await activities();
  t.equal(logged.length, 2, 'the plain row was logged by the dispatcher, the raised one not again');
  t.ok(logged.includes(`act_${legacy.id.replace(/^evt_/, '')}`), 'the raised event keeps its one record, under its own id');
});

t.test('a row raised while the activity log is off names no recorder, and is not logged when planned after it was enabled', async (t) => {
  const env = await deliveryEnv(t);
  const { call, running } = env;
  const { outbox } = running.services;
  t.equal((await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw' } })).status, 200);
  t.equal((await call('/v1/commentannotations/add', threadBody('t1'))).status, 200);
  const [row] = outbox.read();
  t.equal(row?.recordedBy, undefined);
  // Enabled after the event (enabledTime past its creation, on any clock): the planner reads the config and keeps out.
  const enabledTime = (row?.createdAt ?? 0) + 1;
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true, enabledTime } })).status, 200);
  await env.pump();
  t.same(outbox.read(), [], 'planned');
  t.same((await call<unknown[]>('/v2/activities/get', { organizationId: scope.organizationId })).data, [], 'enabled after it committed: not logged when planned');
});
