// Tests the gauges of the shared queues on /metrics: they move with real queued work (deliveries, agent tasks, background jobs) and fall back when it ends.
import t from 'tap';
import { parseExposition, sampleValue, type Exposition } from '../helpers/prometheus.js';
import { pageServer } from '../helpers/pages.js';
import { dataOf } from '../helpers/directory.js';
import { KEY_SHARE } from '../../src/delivery/dispatcher.js';
import { deliveryEnv, threadBody } from '../delivery/delivery-env.js';
import { scope as agentScope, setup as agentSetup } from '../agents/run-env.js';

const QUEUE_GAUGES = [
  'plait_delivery_attempts_in_flight',
  'plait_delivery_targets_full',
  'plait_delivery_keys_full',
  'plait_delivery_targets_throttled',
  'plait_delivery_targets_failing',
  'plait_delivery_jobs_pending',
  'plait_delivery_targets_pending',
  'plait_delivery_overdue_seconds',
  'plait_outbox_events',
  'plait_outbox_events_parked',
  'plait_agent_tasks_waiting',
  'plait_agent_tasks_running',
  'plait_agent_keys_waiting',
  'plait_background_jobs_running',
  'plait_background_jobs_waiting',
];

async function scrape(url: string): Promise<Exposition> {
  const response = await fetch(`${url}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return parseExposition(await response.text());
}

/** The queue gauges of one scrape, by name without the prefix. */
async function queues(url: string): Promise<Record<string, number>> {
  const exposition = await scrape(url);
  return Object.fromEntries(QUEUE_GAUGES.map((name) => [name.replace(/^plait_/, ''), sampleValue(exposition, name)]));
}

/** Waits, a turn of the event loop at a time, until `ready` holds (a task reaches its queue a few turns after the answer). */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('every queue gauge is exported as a gauge, at 0 on an idle server', async (t) => {
  const env = await deliveryEnv(t);
  await env.pump();
  const exposition = await scrape(env.server.url);
  for (const name of QUEUE_GAUGES) {
    t.equal(exposition.types.get(name), 'gauge', `${name} is a gauge`);
    t.equal(sampleValue(exposition, name), 0, `${name} is 0`);
  }
});

t.test('delivery: events parked in an API key\'s lane count in the backlog until they are planned', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  for (let i = 0; i < 40; i++) await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `http://127.0.0.1:9/hook-${i}` });
  for (let i = 0; i < 30; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  t.match(await queues(env.server.url), { outbox_events: 30, outbox_events_parked: 0 }, 'thirty events wait in the outbox');
  await env.running.services.delivery.dispatcher.pump();
  // The key planned its share of the round, rounded up to whole events to 40 endpoints; the others wait in its lane.
  const waiting = 30 - Math.ceil(KEY_SHARE / 40);
  t.ok(waiting > 0, `a round plans ${30 - waiting} of the 30 events`);
  t.match(await queues(env.server.url), { outbox_events: waiting, outbox_events_parked: waiting }, 'the rest is parked, and still counted');
  await env.running.services.delivery.dispatcher.drain();
  t.match(await queues(env.server.url), { outbox_events: 0, outbox_events_parked: 0 }, 'all planned');
});

t.test('delivery: the outbox backlog, pending jobs, attempts held in flight by an endpoint that has not answered, how overdue', async (t) => {
  const hook = await pageServer(t, { '/raw': { body: 'ok' } });
  const env = await deliveryEnv(t);
  const { call, clock, running } = env;
  const { dispatcher, runner } = running.services.delivery;
  t.equal((await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${hook.url}/raw` } })).status, 200);
  await env.pump(); // the owner's verification email, queued when the workspace was made
  // One delivery first: a target that has never answered has one attempt in flight at a time (unproven); this one has.
  t.equal((await call('/v1/commentannotations/add', threadBody('proof'))).status, 200);
  await dispatcher.drain();
  await runner.drain();

  for (let i = 0; i < 10; i++) t.equal((await call('/v1/commentannotations/add', threadBody(`thread-${i}`))).status, 200);
  t.match(await queues(env.server.url), { outbox_events: 10, delivery_jobs_pending: 0 }, 'ten events wait for the dispatcher');

  await dispatcher.drain();
  t.match(await queues(env.server.url), { outbox_events: 0, delivery_jobs_pending: 10, delivery_targets_pending: 1, delivery_attempts_in_flight: 0, delivery_overdue_seconds: 0 }, 'planned: ten jobs for the one webhook URL');

  const held = hook.hold('/raw');
  const scan = runner.runDue();
  await held.arrived;
  clock.advance(5_000);
  t.match(
    await queues(env.server.url),
    { delivery_attempts_in_flight: 8, delivery_targets_full: 1, delivery_keys_full: 0, delivery_jobs_pending: 10, delivery_overdue_seconds: 5 },
    'the endpoint holds its 8 slots; every job is still pending, the earliest due 5 s ago',
  );

  held.release();
  await scan;
  await runner.drain();
  t.match(await queues(env.server.url), { delivery_attempts_in_flight: 0, delivery_targets_full: 0, delivery_jobs_pending: 0, delivery_targets_pending: 0, delivery_overdue_seconds: 0 }, 'all delivered');
  t.equal(hook.requests.length, 11);
});

t.test('delivery: an advanced webhook endpoint at its rate limit counts as throttled until its wait ends', async (t) => {
  const hook = await pageServer(t, { '/hook': { body: 'ok' } });
  const env = await deliveryEnv(t);
  const { call } = env;
  t.equal((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  t.equal((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${hook.url}/hook`, rateLimit: 1 })).status, 200);
  await env.pump();
  for (let i = 0; i < 2; i++) t.equal((await call('/v1/commentannotations/add', threadBody(`thread-${i}`))).status, 200);
  await env.pump();
  t.match(await queues(env.server.url), { delivery_targets_throttled: 1, delivery_jobs_pending: 1 }, 'one message sent, the second waits for the next second');
  await env.advance(1_000);
  t.match(await queues(env.server.url), { delivery_targets_throttled: 0, delivery_jobs_pending: 0 });
  t.equal(hook.requests.length, 2, 'the second went once the wait ended');
});

t.test('agent pool: tasks running and waiting, and the API keys waiting, while a run is held on a slow page', async (t) => {
  const { f, pages } = await agentSetup(t, { agentPoolSize: 1 });
  const { pool, runs } = f.server.services.agents;
  const other = await f.api.createWorkspace();
  const held = pages.hold('/slow');
  dataOf(t, await f.call('/v2/agents/execution/run', { ...agentScope, agentId: 'readability', url: `${pages.url}/slow` }));
  await held.arrived;
  dataOf(t, await f.call('/v2/agents/execution/run', { ...agentScope, agentId: 'readability', url: `${pages.url}/page` }));
  dataOf(t, await f.api.call(other, '/v2/agents/execution/run', { ...agentScope, agentId: 'readability', url: `${pages.url}/page` }));
  await until(() => pool.occupancy().waiting === 2);
  t.match(await queues(f.url), { agent_tasks_running: 1, agent_tasks_waiting: 2, agent_keys_waiting: 2 }, 'one runs on the only thread; one task of each key waits');

  held.release();
  await runs.settled();
  t.match(await queues(f.url), { agent_tasks_running: 0, agent_tasks_waiting: 0, agent_keys_waiting: 0 });
});

t.test('background jobs: running and waiting for a slot, one API key at its limit of two', async (t) => {
  const env = await deliveryEnv(t);
  const { jobs } = env.running.services;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  jobs.register('held', () => gate);
  for (let i = 0; i < 3; i++) await jobs.submit(env.creds.apiKey, 'held', {});
  t.match(await queues(env.server.url), { background_jobs_running: 2, background_jobs_waiting: 1 });
  release();
  await jobs.idle();
  t.match(await queues(env.server.url), { background_jobs_running: 0, background_jobs_waiting: 0 });
});
