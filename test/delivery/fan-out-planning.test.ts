// Tests the bounds on webhook fan-out: at most MAX_ENDPOINTS_PER_KEY endpoints per API key, and a dispatcher round whose events fan out past JOB_BUDGET jobs commits in several transactions, planning each event once.
import t from 'tap';
import { JOB_BUDGET } from '../../src/delivery/dispatcher.js';
import { MAX_ENDPOINTS_PER_KEY } from '../../src/delivery/endpoints.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import { deliveryEnv, threadBody } from './delivery-env.js';
import { countingTransactions } from '../helpers/store.js';

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

t.test('a round whose events fan out past the job budget commits in several transactions and plans every event once', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const endpoints = 40;
  const events = 30;
  for (let i = 0; i < endpoints; i++) await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  for (let i = 0; i < events; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  const { store, outbox, delivery } = env.running.services;
  const { result: planned, transactions } = await countingTransactions(store, () => delivery.dispatcher.pump());
  t.equal(planned, events, 'one round took the whole batch');
  const jobs = delivery.queue.pending().filter((job) => job.channel === 'advancedWebhook');
  t.equal(jobs.length, endpoints * events, 'one job per event and endpoint');
  t.equal(new Set(jobs.map((job) => job.id)).size, jobs.length, 'none twice');
  t.ok(transactions >= Math.ceil((endpoints * events) / JOB_BUDGET), `several transactions (${transactions}), each bounded by the budget`);
  t.same(outbox.read(), [], 'every event acked');
  t.equal(await delivery.dispatcher.pump(), 0, 'nothing left to plan');
});
