// Tests that creating, delivering to and deleting advanced webhook endpoints leaves nothing behind that grows with the cycles.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { ManualClock } from '../../src/delivery/clock.js';
import { ProvenTargets } from '../../src/delivery/proven-targets.js';
import { DeliveryQueue, type ChannelName } from '../../src/delivery/queue.js';
import { DeliveryRunner, type ChannelRunner } from '../../src/delivery/runner.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { collectGarbage } from '../helpers/gc.js';
import { startReceiver } from '../helpers/receiver.js';
import { deliveryEnv, threadBody } from './delivery-env.js';

const CYCLES = 40;

/** The collector (the tests below read the heap after it), or a failure saying this process has none. */
function gcOrFail(t: Test): (() => void) | undefined {
  const gc = collectGarbage();
  if (gc === undefined) t.fail('no gc available in this process');
  return gc;
}

/** A workspace with advanced webhooks on, and the proofs held before the test's cycles: in memory and stored. */
async function churnEnv(t: Test) {
  const env = await deliveryEnv(t);
  const { delivery } = env.running.services;
  t.equal((await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  await env.pump();
  const rows = env.running.services.store.records<number>(DB.deliveryProven);
  return { env, delivery, rows, provenBefore: delivery.proven.size, storedBefore: Array.from(rows.getKeys({})).length };
}

/** A real HTTP endpoint that holds each request until `release()` answers it 200; `arrived` resolves at the first. */
async function gatedReceiver(t: Test): Promise<{ url: string; arrived: Promise<void>; release(): void }> {
  const held: ServerResponse[] = [];
  let arrivedOne: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => (arrivedOne = resolve));
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      held.push(res);
      arrivedOne();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, arrived, release: () => held.splice(0).forEach((res) => res.end('ok')) };
}

t.test('an endpoint created, delivered to and deleted, again and again, leaves no proof, stored or in memory, and no rate-limit slot', async (t) => {
  const receiver = await startReceiver(t);
  const { env, delivery, rows, provenBefore, storedBefore } = await churnEnv(t);
  for (let i = 0; i < CYCLES; i++) {
    const created = await env.call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook`, rateLimit: 1 });
    t.equal(created.status, 200);
    await env.call('/v1/commentannotations/add', threadBody(`thread-${i}`));
    await env.pump();
    t.equal(receiver.requests.length, i + 1, `cycle ${i}: delivered`);
    t.equal((await env.call('/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: created.data.id })).status, 200);
    // The next endpoint's slot is set a second later: this one's has passed by then.
    await env.advance(1000);
  }
  t.equal(delivery.proven.size, provenBefore, `no deleted endpoint's proof in memory (it held ${CYCLES} more)`);
  t.equal(Array.from(rows.getKeys({})).length, storedBefore, 'nor stored');
  t.ok(delivery.advanced.pacedEndpoints <= 1, `rate-limit slots of deleted endpoints dropped (${delivery.advanced.pacedEndpoints} left; it held one per endpoint ever sent to)`);
});

t.test('a proof kept in memory holds its target, not the job record the target was decoded from', async (t) => {
  const gc = gcOrFail(t);
  if (gc === undefined) return;
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const jobs = store.records<Record<string, unknown>>(DB.deliveryJobs);
  const n = 5000;
  // Rows shaped like an advanced webhook job: the target among longer strings, as LMDB hands them back.
  await store.transaction(() => {
    for (let i = 0; i < n; i++) {
      const endpointId = `ep_${String(i).padStart(24, '0')}`;
      const messageId = `msg_${String(i).padStart(32, 'f')}`;
      jobs.putSync(`job${i}`, { id: `${messageId}:${endpointId}`, channel: 'advancedWebhook', apiKey: 'key_aaaaaaaaaaaaaaaaaaaaaaaa', target: `adv:${endpointId}`, due: 1, attempt: 0, state: 'pending', createdAt: 1, updatedAt: 1, organizationId: 'org1', documentId: 'doc1', payload: { endpointId, messageId } });
    }
  });
  const proven = new ProvenTargets();
  gc();
  const before = process.memoryUsage().heapUsed;
  await store.transaction((tx) => {
    for (let i = 0; i < n; i++) proven.record(tx, String(jobs.get(`job${i}`)?.target), 1);
  });
  gc();
  const perEntry = (process.memoryUsage().heapUsed - before) / n;
  t.equal(proven.size, n);
  // A flat 31-character string, a Map entry and a number: 70-85 B measured. Holding the record's text, ~440 B.
  t.ok(perEntry < 300, `${perEntry.toFixed(0)} B an entry, under 300`);
});

t.test('an endpoint deleted while its attempt is out leaves no proof when the attempt then succeeds', async (t) => {
  const receiver = await gatedReceiver(t);
  const { env, delivery, rows, provenBefore, storedBefore } = await churnEnv(t);
  for (let i = 0; i < 3; i++) {
    const gate = i === 0 ? receiver : await gatedReceiver(t);
    const created = await env.call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${gate.url}/hook` });
    await env.call('/v1/commentannotations/add', threadBody(`thread-${i}`));
    await delivery.dispatcher.drain();
    const sent = delivery.runner.drain();
    await gate.arrived;
    t.equal((await env.call('/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: created.data.id })).status, 200, 'deleted while its attempt is out');
    gate.release();
    await sent;
  }
  t.equal(delivery.proven.size, provenBefore, 'the successes settled after the deletions recorded no proof in memory');
  t.equal(Array.from(rows.getKeys({})).length, storedBefore, 'nor stored');
});

t.test('an endpoint deleted with its webhook pending is not remembered as failing: its cancelled job tried nothing', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { delivery } = env.running.services;
  t.equal((await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  await env.pump();
  for (let i = 0; i < 20; i++) {
    const created = await env.call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
    await env.call('/v1/commentannotations/add', threadBody(`thread-${i}`));
    await delivery.dispatcher.drain();
    t.equal((await env.call('/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: created.data.id })).status, 200);
    await delivery.runner.drain();
  }
  t.equal(receiver.requests.length, 0, 'nothing was sent');
  t.equal(delivery.queue.list((job) => job.channel === 'advancedWebhook' && job.state === 'cancelled').length, 20, 'each job ended cancelled');
  t.equal(delivery.runner.occupancy().targetsFailing, 0, 'and no target is held as failing (it was one per deleted endpoint)');
});

t.test('a failing target kept in memory holds its name, not the job record it was decoded from', async (t) => {
  const gc = gcOrFail(t);
  if (gc === undefined) return;
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  const clock = new ManualClock(Date.UTC(2026, 10, 28));
  // Every attempt fails for good (no retry): each target is then held as failing.
  const channel: ChannelRunner = { retryDelaysMs: [], attempt: () => Promise.resolve({ ok: false, error: 'HTTP 500' }) };
  const channels: Record<ChannelName, ChannelRunner> = { email: channel, webhook: channel, advancedWebhook: channel, notification: channel, account: channel };
  const runner = new DeliveryRunner({ queue, channels, clock, log: createLogger('silent'), maxInFlightUnproven: 256, maxInFlightUnprovenPerKey: 256, maxInFlightPerKey: 256 });
  const n = 5000;
  // Long ids, as a client may choose them: the record's text, which a slice would hold, is the larger.
  const organizationId = `org-${'o'.repeat(196)}`;
  const documentId = `doc-${'d'.repeat(196)}`;
  const enqueue = (from: number, to: number) => store.transaction((tx) => {
    for (let i = from; i < to; i++) {
      const endpointId = `ep_${String(i).padStart(24, '0')}`;
      queue.enqueue(tx, { id: `msg_${String(i).padStart(32, 'f')}:${endpointId}`, channel: 'advancedWebhook', apiKey: 'key_aaaaaaaaaaaaaaaaaaaaaaaa', target: `adv:${endpointId}`, due: clock.now(), createdAt: clock.now(), organizationId, documentId, payload: { endpointId, messageId: `msg_${i}` } });
    }
  });
  // A round first: the runner's and the store's first-use allocations are not counted.
  await enqueue(0, 1000);
  await runner.drain();
  await enqueue(1000, 1000 + n);
  gc();
  const before = process.memoryUsage().heapUsed;
  await runner.drain();
  gc();
  const perEntry = (process.memoryUsage().heapUsed - before) / n;
  t.equal(runner.occupancy().targetsFailing, 1000 + n);
  // A flat 31-character string and a Set entry, ~85 B, plus what the scans compiled and tap's coverage counts (120-380
  // B an entry measured here). Holding the record's text, over 1 KB.
  t.ok(perEntry < 600, `${perEntry.toFixed(0)} B an entry, under 600`);
});
