// Tests crdt.update_data: a store's changes raise one debounced event, delivered to advanced and (when its trigger is on) basic webhooks.
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { CRDT_EVENT_MAX_DATA_BYTES } from '../../src/doc/crdt-events.js';
import { startReceiver } from '../helpers/receiver.js';
import { connect, editorOf, synced, userToken, type Room } from '../helpers/sync.js';
import { deliveryEnv } from './delivery-env.js';

const room: Room = { organizationId: 'org-c', documentId: 'doc-c', editorId: 'main' };
const crdt = { organizationId: room.organizationId, documentId: room.documentId, editorId: room.editorId };

t.test('advanced webhooks: REST changes in a burst make one signed event, after the quiet time, with the content then', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  const events = env.running.services.crdtEvents;
  t.equal((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  const endpoint = await call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
  const secret = await call<{ secret: string }>('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: endpoint.data.id });
  t.equal((await call('/v2/crdt/add', { ...crdt, type: 'text', data: 'hello' })).status, 200);
  t.equal((await call('/v2/crdt/update', { ...crdt, type: 'text', data: 'hello world' })).status, 200);

  events.raiseDue(false);
  await events.settled();
  await env.pump();
  t.equal(receiver.requests.length, 0, 'not before the store has been quiet for the debounce time');

  events.raiseDue(true);
  await events.settled();
  await env.pump();
  const [delivery] = await receiver.waitFor(1);
  const headers = { 'webhook-id': String(delivery?.headers['webhook-id']), 'webhook-timestamp': String(delivery?.headers['webhook-timestamp']), 'webhook-signature': String(delivery?.headers['webhook-signature']) };
  const body = new Webhook(secret.data.secret).verify(delivery?.body ?? '', headers);
  t.match(body, {
    event: 'crdt.update_data',
    actionType: 'updateData',
    source: 'crdt',
    webhookId: headers['webhook-id'],
    data: {
      crdtData: { id: 'main', data: 'hello world', lastUpdatedBy: 'rest-api', sessionId: null, lastUpdate: /^\d{4}-\d\d-\d\dT/ },
      actionUser: { userId: 'rest-api' },
      metadata: { apiKey: env.creds.apiKey, organizationId: 'org-c', documentId: 'doc-c' },
    },
  });
  events.raiseDue(true);
  await events.settled();
  await env.pump();
  t.equal(receiver.requests.length, 1, 'one event for the burst: nothing pending once it went');
});

t.test('basic webhooks: off by default (upstream seeds the crdt trigger off), on with it; comment channels ignore it', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  const events = env.running.services.crdtEvents;
  const webhook = (triggers: Record<string, boolean>) =>
    call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${receiver.url}/raw`, processedNotificationUrl: `${receiver.url}/processed`, triggers } });
  t.equal((await webhook({})).status, 200);
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } })).status, 200);
  t.equal((await call('/v2/workspace/notificationconfig/update', { useNotificationService: true })).status, 200);
  t.equal((await call('/v2/crdt/add', { ...crdt, type: 'map', data: { a: 1 } })).status, 200);
  events.raiseDue(true);
  await events.settled();
  await env.pump();
  t.equal(receiver.requests.length, 0, 'nothing wants it: no event raised');

  t.equal((await webhook({ 'crdt.update_data': true })).status, 200);
  t.equal((await call('/v2/crdt/update', { ...crdt, type: 'map', data: { a: 2 } })).status, 200);
  events.raiseDue(true);
  await events.settled();
  await env.pump();
  const posts = await receiver.waitFor(2);
  t.same(posts.map((p) => p.path).sort(), ['/processed', '/raw']);
  for (const post of posts) {
    t.match(JSON.parse(post.body), { actionType: 'updateData', notificationSource: 'crdt', crdtData: { id: 'main', data: { a: 2 } }, metadata: { documentId: 'doc-c', clientDocumentId: 'doc-c', organizationId: 'org-c' } }, post.path);
  }
  t.same((await call<unknown[]>('/v2/activities/get', { organizationId: 'org-c' })).data, [], 'no activity record of a crdt event');
  t.same((await call<unknown[]>('/v2/notifications/get', { organizationId: 'org-c' })).data, [], 'no notification either');
});

t.test('a stock y-websocket provider\'s edits name its user; a store too large goes without data; a stop raises what is pending', async (t) => {
  const receiver = await startReceiver(t);
  const base = t.testdir();
  const env = await deliveryEnv(t, {}, base);
  const { call } = env;
  const events = env.running.services.crdtEvents;
  t.equal((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  t.equal((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook`, filterTypes: ['crdt.update_data'] })).status, 200);

  const url = `http://127.0.0.1:${env.running.port}`;
  const token = await userToken(env.server.api, env.creds, [editorOf(room)], 'writer-1');
  const writer = connect(t, url, room, token);
  const reader = connect(t, url, room, token);
  await Promise.all([synced(writer), synced(reader)]);
  // The reader hears the edit from the server, which applied it (and noted the change) before publishing it.
  const heard = new Promise<void>((resolve) => reader.text.observe(() => reader.text.toString() === 'typed' && resolve()));
  writer.text.insert(0, 'typed');
  await heard;
  events.raiseDue(true);
  await events.settled();
  await env.pump();
  const [typed] = await receiver.waitFor(1);
  t.match(JSON.parse(typed?.body ?? ''), { event: 'crdt.update_data', data: { crdtData: { data: 'typed', lastUpdatedBy: 'writer-1', sessionId: String }, actionUser: { userId: 'writer-1' } } });

  const big = 'x'.repeat(CRDT_EVENT_MAX_DATA_BYTES + 1);
  const other = { ...crdt, editorId: 'big' };
  t.equal((await call('/v2/crdt/add', { ...other, type: 'text', data: big })).status, 200);
  events.raiseDue(true);
  await events.settled();
  await env.pump();
  const [, large] = await receiver.waitFor(2);
  t.match(JSON.parse(large?.body ?? ''), { data: { crdtData: { id: 'big', data: null } } }, `over ${CRDT_EVENT_MAX_DATA_BYTES} bytes of JSON: data null, read it with crdt/get`);

  t.equal((await call('/v2/crdt/update', { ...other, type: 'text', data: 'small again' })).status, 200);
  await env.running.stop();
  const again = await deliveryEnv(t, {}, base);
  await again.pump();
  const [, , atStop] = await receiver.waitFor(3);
  t.match(JSON.parse(atStop?.body ?? ''), { data: { crdtData: { id: 'big', data: 'small again' } } }, 'raised at the stop, delivered after the restart');
});
