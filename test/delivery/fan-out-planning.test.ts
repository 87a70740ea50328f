// Tests the bounds on webhook fan-out: at most MAX_ENDPOINTS_PER_KEY endpoints per API key, each API key's share of a dispatcher round (the rest parked in its lane), and transactions of at most JOB_BUDGET jobs, planning each event once.
import t from 'tap';
import { JOB_BUDGET, KEY_SHARE } from '../../src/delivery/dispatcher.js';
import { MAX_ENDPOINTS_PER_KEY } from '../../src/delivery/endpoints.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import { DB } from '../../src/store/keys.js';
import { envFor } from '../http/comments-env.js';
import { deliveryEnv, scope, threadBody } from './delivery-env.js';

t.test('an API key holds at most MAX_ENDPOINTS_PER_KEY endpoints; deleting one makes room', async (t) => {
  const env = await deliveryEnv(t);
  t.equal((await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  const ids: string[] = [];
  for (let i = 0; i < MAX_ENDPOINTS_PER_KEY; i++) {
    const created = await env.call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
    ids.push(created.data.id);
  }
  t.equal(new Set(ids).size, MAX_ENDPOINTS_PER_KEY);
  const refusedBefore = limitRefusals.webhook_endpoints_per_key;
  const refused = await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'http://127.0.0.1:9/one-more' });
  t.equal(limitRefusals.webhook_endpoints_per_key, refusedBefore + 1, 'the refusal is counted (plait_limit_refusals_total)');
  t.equal(refused.status, 400);
  t.match(refused.error, { status: 'INVALID_ARGUMENT', message: new RegExp(`at most ${MAX_ENDPOINTS_PER_KEY} advanced webhook endpoints`) });
  t.equal((await env.call('/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: ids[0] })).status, 200);
  t.equal((await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'http://127.0.0.1:9/one-more' })).status, 200, 'room again after a delete');
});

t.test('one key\'s fan-out past its share of a round is parked in its lane: every event is planned once, and no transaction writes more than the budget and one event', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const endpoints = 40;
  const events = 30;
  for (let i = 0; i < endpoints; i++) await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  for (let i = 0; i < events; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  const { store, outbox, delivery } = env.running.services;
  const writes: number[] = [];
  const transaction = store.transaction.bind(store);
  store.transaction = ((body) => transaction((tx) => {
    const before = delivery.queue.writeCount;
    try {
      return body(tx);
    } finally {
      writes.push(delivery.queue.writeCount - before);
    }
  })) as typeof store.transaction;
  t.teardown(() => void (store.transaction = transaction));
  t.equal(await delivery.dispatcher.pump(), events, 'the first round took the batch');
  t.equal(outbox.lanes.size, 1, 'and parked part of it in the key\'s lane');
  const webhookJobs = (): number => delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook').length;
  t.equal(webhookJobs(), Math.ceil(KEY_SHARE / endpoints) * endpoints, 'the round planned the key\'s share, rounded up to whole events');
  while (outbox.backlog().parked > 0) await delivery.dispatcher.pump();
  const jobs = delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook');
  t.equal(jobs.length, endpoints * events, 'one job per event and endpoint');
  t.equal(new Set(jobs.map((job) => job.id)).size, jobs.length, 'none twice');
  t.ok(Math.max(...writes) <= JOB_BUDGET + endpoints, `each transaction wrote at most the budget and one event's jobs (${Math.max(...writes)})`);
  t.same(outbox.read(), [], 'every event acked');
  t.equal(outbox.lanes.size, 0, 'the round that planned the lane to its end took its turn away');
  // The lane planned to its end lost its turn: the key's next event is planned as it comes, not parked first.
  let parked = 0;
  const parkIn = outbox.parkIn.bind(outbox);
  outbox.parkIn = (tx, refs) => {
    parked += refs.length;
    parkIn(tx, refs);
  };
  await env.call('/v1/commentannotations/add', threadBody('after'));
  t.equal(await delivery.dispatcher.pump(), 1);
  t.equal(parked, 0, 'nothing parked');
  t.equal(delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook').length, endpoints * (events + 1));
  t.equal(await delivery.dispatcher.pump(), 0, 'nothing left to plan');
});

t.test('another key\'s event is planned in the first round, ahead of the parked fan-out of a key that wrote before it', async (t) => {
  const env = await deliveryEnv(t);
  const other = envFor(env.server, await env.server.api.createWorkspace());
  for (const e of [env, other]) await e.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const endpoints = 50;
  for (let i = 0; i < endpoints; i++) await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  await other.call('/v2/workspace/advancedwebhook/endpoints/create', { url: 'http://127.0.0.1:9/other' });
  for (let i = 0; i < 150; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  await other.call('/v1/commentannotations/add', threadBody('theirs'));
  const { delivery, outbox } = env.running.services;
  const heavy = new Set([env.creds.apiKey]);
  const light = new Set([other.creds.apiKey]);
  await delivery.dispatcher.pump();
  t.equal(delivery.queue.pending(light).length, 1, 'the other key\'s event was planned in the first round');
  const planned = delivery.queue.pending(heavy).length;
  t.ok(planned < 150 * endpoints, `the heavy key had its share (${planned} jobs of ${150 * endpoints})`);
  t.ok(outbox.lanes.has(env.creds.apiKey), 'the rest waits in its lane');
  await delivery.dispatcher.drain();
  const byEndpoint = new Map<string, string[]>();
  for (const job of delivery.queue.pending(heavy)) {
    const list = byEndpoint.get(job.target) ?? [];
    list.push(job.id);
    byEndpoint.set(job.target, list);
  }
  t.equal(byEndpoint.size, endpoints);
  t.ok([...byEndpoint.values()].every((ids) => ids.length === 150), 'every event reached every endpoint');
});

t.test('a document deleted while its events are parked: they leave the lane and nothing is planned from them', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  t.equal((await env.call('/v2/organizations/documents/add', { organizationId: scope.organizationId, documents: [{ documentId: scope.documentId }] })).status, 200);
  for (let i = 0; i < 30; i++) await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  for (let i = 0; i < 40; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  const { delivery, outbox } = env.running.services;
  await delivery.dispatcher.pump();
  const before = delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook').length;
  t.ok(outbox.lanes.size === 1 && before < 40 * 30, `part planned (${before} jobs), the rest parked`);
  const deleted = await env.call<Record<string, { success: boolean }>>('/v2/organizations/documents/delete', { organizationId: scope.organizationId, documentIds: [scope.documentId] });
  t.equal(deleted.data[scope.documentId]?.success, true, 'the document is deleted');
  await delivery.dispatcher.drain();
  // The workspace's own account email (owner verification) is about no document.
  t.same(delivery.queue.pending().filter((job) => job.documentId !== undefined), [], 'the planned jobs were cancelled and nothing more was planned');
  t.equal(delivery.queue.list((job) => job.channel === 'advancedWebhook' && job.state === 'cancelled').length, before, 'only those planned before the deletion were ever made');
  t.equal(outbox.lanes.size, 0, 'the lane is empty');
});

t.test('parked events survive a restart, and the next dispatcher plans them', async (t) => {
  const dataDir = t.testdir();
  const first = await deliveryEnv(t, {}, dataDir);
  await first.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  for (let i = 0; i < 30; i++) await first.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  for (let i = 0; i < 40; i++) await first.call('/v1/commentannotations/add', threadBody(`t${i}`));
  await first.running.services.delivery.dispatcher.pump();
  const parked = first.running.services.outbox.backlog().parked;
  t.ok(parked > 0, `${parked} events parked`);
  await first.running.stop();
  const second = await deliveryEnv(t, {}, dataDir);
  const { delivery, outbox } = second.running.services;
  t.same(outbox.backlog(), { waiting: 0, parked }, 'the parked events are still there after the restart');
  await delivery.dispatcher.drain();
  const jobs = delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook');
  t.equal(jobs.length, 40 * 30, 'every event reached every endpoint, none twice');
  t.equal(new Set(jobs.map((job) => job.id)).size, jobs.length);
  t.same(outbox.backlog(), { waiting: 0, parked: 0 });
});

t.test('a planning transaction reads each target\'s head and each key\'s endpoints once, however many of its events go to them', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const endpoints = 5;
  const events = 4;
  for (let i = 0; i < endpoints; i++) await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  for (let i = 0; i < events; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  const { store, delivery } = env.running.services;
  // Finding a head is a cursor over the target's jobs (DueIndex); the endpoints are a range of the key's records.
  const reads = { heads: 0, endpoints: 0 };
  const byTarget = store.records<null>(DB.deliveryTargetDue);
  const endpointRows = store.records<unknown>(DB.webhookEndpoints);
  const getKeys = byTarget.getKeys.bind(byTarget);
  const getRange = endpointRows.getRange.bind(endpointRows);
  byTarget.getKeys = ((options) => (reads.heads++, getKeys(options))) as typeof byTarget.getKeys;
  endpointRows.getRange = ((options) => (reads.endpoints++, getRange(options))) as typeof endpointRows.getRange;
  t.teardown(() => {
    byTarget.getKeys = getKeys;
    endpointRows.getRange = getRange;
  });
  t.equal(await delivery.dispatcher.pump(), events, 'one round, one transaction');
  t.same(reads, { heads: endpoints, endpoints: 1 }, `a head read per target, not per job (${endpoints * events}), and the endpoints once, not per event`);
  t.equal(delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook').length, endpoints * events);
});
