// Tests the advanced webhook endpoint operations (spec 4.3, 4.4) and the activity-log operations (spec 4.15, upstream 2.19).
import t from 'tap';
import { startReceiver } from '../helpers/receiver.js';
import { alice, deliveryEnv, scope, threadBody } from './delivery-env.js';

interface Endpoint {
  id: string;
  url: string;
  description: string | null;
  filterTypes: string[] | null;
  channels: string[] | null;
  disabled: boolean;
  rateLimit: number | null;
  uid: string | null;
  createdAt: string;
  updatedAt: string;
}

t.test('endpoints: create, page with limit and iterator, partial update with explicit nulls, secret, delete', async (t) => {
  const { call, clock } = await deliveryEnv(t);
  await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const created = await call<Endpoint>('/v2/workspace/advancedwebhook/endpoints/create', { url: 'https://hooks.example.com/a', description: 'first', filterTypes: ['comment.add'], rateLimit: 5, uid: 'a' });
  t.match(created.data, { url: 'https://hooks.example.com/a', description: 'first', filterTypes: ['comment.add'], channels: null, disabled: false, rateLimit: 5, uid: 'a' });
  t.match(created.data.id, /^ep_/);
  t.equal(created.data.createdAt, new Date(clock.now()).toISOString());
  const bare = await call<Endpoint>('/v2/workspace/advancedwebhook/endpoints/create', { url: 'https://hooks.example.com/b' });
  t.same([bare.data.description, bare.data.filterTypes, bare.data.channels, bare.data.rateLimit, bare.data.uid], [null, null, null, null, null], 'unset optionals are explicit null');
  for (const letter of ['c', 'd', 'e']) await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `https://hooks.example.com/${letter}` });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'ftp://x' })).error, { status: 'INVALID_ARGUMENT', message: /url/ });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'https://x.example.com', filterTypes: [] })).error, { status: 'INVALID_ARGUMENT', message: /filterTypes/ });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'https://x.example.com', rateLimit: 0 })).error, { status: 'INVALID_ARGUMENT', message: /rateLimit/ });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'https://x.example.com', uid: 'a' })).error, { status: 'ALREADY_EXISTS', message: /data\.uid "a" is already used/ });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: bare.data.id, uid: 'a' })).error, { status: 'ALREADY_EXISTS', message: /data\.uid "a"/ }, 'nor taken over by an update');
  t.equal((await call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: created.data.id, uid: 'a' })).status, 200, 'its own uid again is no conflict');

  type Page = { endpoints: Endpoint[]; iterator: string | null; prevIterator: string | null; done: boolean };
  const seen: string[] = [];
  let page = await call<Page>('/v2/workspace/advancedwebhook/endpoints/get', { limit: 2 });
  t.equal(page.data.prevIterator, null);
  for (;;) {
    seen.push(...page.data.endpoints.map((e) => e.id));
    if (page.data.done) break;
    t.equal(page.data.endpoints.length, 2);
    page = await call<Page>('/v2/workspace/advancedwebhook/endpoints/get', { limit: 2, iterator: page.data.iterator });
    t.type(page.data.prevIterator, 'string');
  }
  t.equal(seen.length, 5);
  t.equal(new Set(seen).size, 5, 'every endpoint once');
  t.equal(page.data.iterator, null, 'the last page has no iterator');
  for (const limit of [0, 251, 1.5]) t.match((await call('/v2/workspace/advancedwebhook/endpoints/get', { limit })).error, { status: 'INVALID_ARGUMENT' }, `limit ${limit}`);
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/get', { iterator: 'garbage' })).error, { status: 'INVALID_ARGUMENT', message: /iterator/ });

  clock.advance(5000);
  const id = created.data.id;
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: id })).error, { status: 'INVALID_ARGUMENT' }, 'only endpointId');
  const updated = await call<Endpoint>('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: id, disabled: true, description: null, rateLimit: null });
  t.match(updated.data, { id, url: 'https://hooks.example.com/a', filterTypes: ['comment.add'], disabled: true, description: null, rateLimit: null, uid: 'a' }, 'partial: the rest kept');
  t.not(updated.data.updatedAt, updated.data.createdAt);
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: id, channels: [] })).error, { status: 'INVALID_ARGUMENT', message: /channels/ });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: 'ep_nope', disabled: true })).error, { status: 'NOT_FOUND' });

  const secret = await call<{ endpointId: string; secret: string }>('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: id });
  t.match(secret.data, { endpointId: id, secret: /^whsec_[A-Za-z0-9+/]{32}$/ });
  const other = await call<{ secret: string }>('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: bare.data.id });
  t.not(other.data.secret, secret.data.secret, 'each endpoint has its own secret');
  t.same((await call('/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: id })).data, { endpointId: id, deleted: true });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: id })).error, { status: 'NOT_FOUND' }, 'secret gone with it');
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: id })).error, { status: 'NOT_FOUND' });
});

t.test('filterTypes and channels decide which endpoints get an event; disabled ones get nothing; messages are listed', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const make = async (path: string, extra: Record<string, unknown>): Promise<string> => (await call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}${path}`, ...extra })).data.id;
  const all = await make('/all', {});
  await make('/comments-only', { filterTypes: ['comment.add'] });
  await make('/threads', { filterTypes: ['comment_annotation.add'] });
  await make('/doc1', { channels: ['doc1'] });
  await make('/doc9', { channels: ['doc9'] });
  await make('/off', { disabled: true });
  await call('/v1/commentannotations/add', threadBody());
  await env.pump();
  t.same(receiver.requests.map((r) => r.path).sort(), ['/all', '/doc1', '/threads']);
  const messages = await call<{ messages: Array<{ eventType: string; status: string; attempts: number; payload: { event: string } }> }>('/v2/workspace/advancedwebhook/endpoints/messages/get', { endpointId: all });
  t.match(messages.data.messages, [{ eventType: 'comment_annotation.add', status: 'success', attempts: 1, payload: { event: 'comment_annotation.add' } }]);
  t.same((await call<{ messages: unknown[] }>('/v2/workspace/advancedwebhook/endpoints/messages/get', { endpointId: all, status: 'fail' })).data.messages, []);
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/messages/attempts/get', { endpointId: all, messageId: 'msg_nope' })).error, { status: 'NOT_FOUND' });
});

t.test('a message whose endpoint was disabled before its attempt ends fail, not pending for good', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const id = (await call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/later-off` })).data.id;
  await call('/v1/commentannotations/add', threadBody());
  await env.running.services.delivery.dispatcher.drain();
  await call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId: id, disabled: true });
  await env.pump();
  t.same(receiver.requests, [], 'nothing sent');
  const listed = await call<{ messages: Array<{ status: string; attempts: number }> }>('/v2/workspace/advancedwebhook/endpoints/messages/get', { endpointId: id });
  t.match(listed.data.messages, [{ status: 'fail', attempts: 0 }], 'settled as failed, with no attempt');
});

interface Activity {
  id: string;
  actionType: string;
  featureType: string;
  immutable: boolean;
  displayMessageTemplate: string;
  changes?: Record<string, { from: unknown; to: unknown }>;
}

t.test('activity logs: add, get with filters and paging, per-item update and delete, immutable event records', async (t) => {
  const env = await deliveryEnv(t);
  const { call, clock } = env;
  t.match((await call('/v2/activities/add', { ...scope, activities: [{ featureType: 'custom', actionType: 'x', actionUser: alice, targetEntityId: 'e' }] })).error, { status: 'FAILED_PRECONDITION' }, 'needs the activity service');
  await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } });
  for (let i = 0; i < 3; i++) {
    clock.advance(1000);
    t.equal((await call('/v2/activities/add', { ...scope, activities: [{ id: `a${i}`, featureType: 'custom', actionType: 'deploy', actionUser: alice, targetEntityId: `build-${i}`, displayMessageTemplate: '{{user}} deployed' }] })).status, 200);
  }
  t.match((await call('/v2/activities/add', { ...scope, activities: [{ featureType: 'custom', actionType: 'x', actionUser: alice }] })).error, { status: 'INVALID_ARGUMENT', message: /targetEntityId is required/ });
  t.match((await call('/v2/activities/add', { ...scope, activities: [{ featureType: 'bogus', actionType: 'x', actionUser: alice }] })).error, { status: 'INVALID_ARGUMENT', message: /featureType/ });

  // An event-recorded activity (immutable by default), with its changes.
  await call('/v1/commentannotations/add', threadBody());
  const done = { id: 'DONE', name: 'Done', type: 'terminal', color: '#0a0', lightColor: '#efe', svg: '<svg/>' };
  const statusUpdate = await call('/v2/commentannotations/update', { ...scope, annotationIds: ['thread-1'], updatedData: { status: done } });
  t.equal(statusUpdate.status, 200, JSON.stringify(statusUpdate.error));
  await env.pump();
  const fromEvents = (await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', featureTypes: ['comment'] })).data;
  t.same(fromEvents.map((a) => a.actionType).sort(), ['comment_annotation.add', 'comment_annotation.status_change']);
  const statusChange = fromEvents.find((a) => a.actionType === 'comment_annotation.status_change');
  t.match(statusChange, { immutable: true, displayMessageTemplate: '{{actionUser}} changed the status of a thread to {{status}}' });
  t.match(statusChange?.changes?.status?.to, { id: 'DONE' });

  const page1 = await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', featureTypes: ['custom'], pageSize: 2, order: 'asc' });
  t.same(page1.data.map((a) => a.id), ['a0', 'a1']);
  const page2 = await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', featureTypes: ['custom'], pageSize: 2, order: 'asc', pageToken: page1.extra['pageToken'] });
  t.same(page2.data.map((a) => a.id), ['a2']);
  t.same((await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', activityIds: ['a1'] })).data.map((a) => a.id), ['a1']);
  t.same((await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', userId: 'nobody' })).data, []);

  const updated = await call<Record<string, { success: boolean; message: string }>>('/v2/activities/update', {
    organizationId: 'org1',
    activities: [{ id: 'a0', displayMessageTemplate: '{{user}} shipped', changes: { version: { from: '1', to: '2' } } }, { id: 'missing', actionIcon: 'x' }, { id: statusChange?.id, actionIcon: 'x' }],
  });
  t.equal(updated.status, 200, 'per-item results inside a success envelope');
  t.match(updated.data, { a0: { success: true, message: 'Activity updated.' }, missing: { success: false, message: /not found/ }, [statusChange?.id ?? '']: { success: false, message: /immutable/ } });
  t.match((await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', activityIds: ['a0'] })).data[0], { displayMessageTemplate: '{{user}} shipped', changes: { version: { from: '1', to: '2' } } });
  t.match((await call('/v2/activities/update', { organizationId: 'org1', activities: [{ id: 'a0', featureType: 'custom' }] })).error, { status: 'INVALID_ARGUMENT' }, 'only the updatable fields of spec 2.12');

  t.match((await call('/v2/activities/delete', { organizationId: 'org1' })).error, { status: 'INVALID_ARGUMENT', message: /at least one of/ });
  const deleted = await call<Record<string, { success: boolean; message: string }>>('/v2/activities/delete', { organizationId: 'org1', activityIds: ['a1', 'missing', statusChange?.id] });
  t.match(deleted.data, { a1: { success: true }, missing: { success: false }, [statusChange?.id ?? '']: { success: false, message: /immutable/ } });
  const byDoc = await call<Record<string, { success: boolean }>>('/v2/activities/delete', { ...scope });
  t.equal(Object.values(byDoc.data).filter((r) => r.success).length, 2, 'the two remaining custom ones deleted; event records kept');
  t.equal((await call<Activity[]>('/v2/activities/get', { organizationId: 'org1' })).data.length, 2);
  // With immutable off, later event records may be edited.
  await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { immutable: false } });
  await call('/v2/commentannotations/comments/add', { ...scope, annotationId: 'thread-1', commentData: [{ commentText: 'later', from: alice }] });
  await env.pump();
  const later = (await call<Activity[]>('/v2/activities/get', { organizationId: 'org1', actionTypes: ['comment.add'] })).data[0];
  t.match(later, { immutable: false });
  t.match((await call('/v2/activities/update', { organizationId: 'org1', activities: [{ id: later?.id, actionIcon: 'icon' }] })).data, { [later?.id ?? '']: { success: true } });
});
