// Tests which comment events are written to the outbox: only those a delivery channel of the API key acts on, as configured when they commit.
import t from 'tap';
import { DB } from '../../src/store/keys.js';
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
  t.same(types(), ['comment.add'], 'only the event the activity log acts on is written');

  await env.pump();
  t.same(types(), [], 'the dispatcher took it');
  const logged = (await call<Activity[]>('/v2/activities/get', { organizationId: scope.organizationId, featureTypes: ['comment'] })).data;
  t.same(logged.map((a) => `${a.actionType} ${a.targetEntityId}`), ['comment.add t1'], 'logged; the thread added before the config was not');

  // Written while enabled, disabled before it was planned: planning reads the config again and logs nothing.
  t.equal((await call('/v2/commentannotations/comments/add', reply('t2', 'second reply'))).status, 200);
  t.same(types(), ['comment.add']);
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: false } })).status, 200);
  await env.pump();
  t.same(types(), [], 'acked');
  t.equal((await call<Activity[]>('/v2/activities/get', { organizationId: scope.organizationId, featureTypes: ['comment'] })).data.length, 1, 'not logged');
  t.equal((await call('/v2/commentannotations/comments/add', reply('t2', 'third reply'))).status, 200);
  t.same(types(), [], 'disabled: not written either');
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
