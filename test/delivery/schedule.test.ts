// Tests delivery timing on a manual clock (no sleeps): advanced retry schedule and exhaustion, auto-disable, rate limit, basic retries.
import t, { type Test } from 'tap';
import { Webhook } from 'standardwebhooks';
import { startReceiver } from '../helpers/receiver.js';
import { deliveryEnv, threadBody, type DeliveryEnv } from './delivery-env.js';

async function withEndpoint(t: Test, env: DeliveryEnv, url: string, extra: Record<string, unknown> = {}): Promise<string> {
  t.equal((await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  const created = await env.call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url, ...extra });
  t.equal(created.status, 200);
  return created.data.id;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

t.test('advanced webhooks retry at 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then message.attempt.exhausted', async (t) => {
  const failing = await startReceiver(t);
  failing.answer = () => 500;
  const watcher = await startReceiver(t);
  const env = await deliveryEnv(t);
  const endpointId = await withEndpoint(t, env, `${failing.url}/hook`);
  const watcherId = (await env.call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${watcher.url}/ops`, filterTypes: ['message.attempt.exhausted'] })).data.id;
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  t.equal(failing.requests.length, 2, 'first attempt, then the immediate retry');
  const steps = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];
  for (const [index, step] of steps.entries()) {
    await env.advance(step - 1);
    t.equal(failing.requests.length, 2 + index, `nothing 1 ms before retry ${index + 2}`);
    await env.advance(1);
    t.equal(failing.requests.length, 3 + index, `retry ${index + 2} exactly on time`);
  }
  await env.advance(24 * HOUR);
  t.equal(failing.requests.length, 9, 'nine attempts in all, then no more');
  const ids = new Set(failing.requests.map((r) => r.headers['webhook-id']));
  t.equal(ids.size, 1, 'the same webhook-id on every attempt');
  const attempts = await env.call<{ status: string; attempts: Array<{ status: string; responseStatusCode: number }> }>('/v2/workspace/advancedwebhook/endpoints/messages/attempts/get', { endpointId, messageId: [...ids][0] });
  t.equal(attempts.data.status, 'fail', 'the message is visibly failed');
  t.equal(attempts.data.attempts.length, 9);
  t.match(attempts.data.attempts[8], { status: 'fail', responseStatusCode: 500 });
  const [exhausted] = await watcher.waitFor(1);
  const secret = (await env.call<{ secret: string }>('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: watcherId })).data.secret;
  // The manual clock is days ahead, so verify() would refuse the timestamp as too new: let the package sign the
  // same content with that timestamp and compare (pipeline.test.ts runs verify() itself on real time).
  const sentAt = new Date(Number(exhausted?.headers['webhook-timestamp']) * 1000);
  t.equal(exhausted?.headers['webhook-signature'], new Webhook(secret).sign(String(exhausted?.headers['webhook-id']), sentAt, exhausted?.body ?? ''));
  t.match(JSON.parse(exhausted?.body ?? '{}'), { type: 'message.attempt.exhausted', data: { endpointId, msgId: [...ids][0] } });
  t.same(env.running.services.delivery.queue.list((j) => j.state === 'failed').map((j) => j.attempt), [9], 'the job ends failed after 9 attempts');
  // Manual resend (Plait extension): one more attempt now.
  failing.answer = () => 204;
  const resend = await env.call('/v2/workspace/advancedwebhook/endpoints/messages/resend', { endpointId, messageId: [...ids][0] });
  t.equal(resend.status, 200);
  await env.pump();
  t.equal(failing.requests.length, 10);
  const after = await env.call<{ status: string; attempts: Array<{ trigger: string; status: string }> }>('/v2/workspace/advancedwebhook/endpoints/messages/attempts/get', { endpointId, messageId: [...ids][0] });
  t.match(after.data, { status: 'success' });
  t.match(after.data.attempts.at(-1), { trigger: 'manual', status: 'success' });
});

t.test('an endpoint failing for 5 days is disabled (a 3xx is a failure) and receives nothing until re-enabled', async (t) => {
  const target = await startReceiver(t);
  target.answer = () => 302;
  const env = await deliveryEnv(t);
  const endpointId = await withEndpoint(t, env, `${target.url}/hook`);
  for (let day = 0; day < 5; day++) {
    await env.call('/v1/commentannotations/add', threadBody(`thread-${day}`));
    await env.pump();
    await env.advance(24 * HOUR);
  }
  const listed = await env.call<{ endpoints: Array<{ id: string; disabled: boolean }> }>('/v2/workspace/advancedwebhook/endpoints/get', {});
  t.match(listed.data.endpoints.find((e) => e.id === endpointId), { disabled: true }, 'disabled after 5 days of failures');
  const before = target.requests.length;
  await env.call('/v1/commentannotations/add', threadBody('thread-late'));
  await env.advance(48 * HOUR);
  t.equal(target.requests.length, before, 'a disabled endpoint receives nothing');
  t.match((await env.call('/v2/workspace/advancedwebhook/endpoints/update', { endpointId, disabled: false })).data, { disabled: false });
});

t.test('rateLimit delays deliveries to one endpoint, never drops them, and leaves other endpoints alone', async (t) => {
  const slow = await startReceiver(t);
  const other = await startReceiver(t);
  const env = await deliveryEnv(t);
  await withEndpoint(t, env, `${slow.url}/hook`, { rateLimit: 2 });
  await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${other.url}/hook` });
  for (let i = 0; i < 5; i++) await env.call('/v1/commentannotations/add', threadBody(`t${i}`));
  await env.pump();
  t.equal(other.requests.length, 5, 'the unlimited endpoint gets all five at once');
  t.equal(slow.requests.length, 1, 'the limited one gets one now');
  await env.advance(499);
  t.equal(slow.requests.length, 1, 'not before 500 ms');
  await env.advance(1);
  t.equal(slow.requests.length, 2, 'the next after 1/rateLimit s');
  await env.advance(500);
  t.equal(slow.requests.length, 3);
  await env.advance(500);
  t.equal(slow.requests.length, 4);
  await env.advance(500);
  t.equal(slow.requests.length, 5, 'all delivered, none dropped');
  t.equal(new Set(slow.requests.map((r) => r.headers['webhook-id'])).size, 5);
});

t.test('basic webhooks retry at 5 s, 1 min, 10 min, 1 h, then end failed', async (t) => {
  const target = await startReceiver(t);
  target.answer = () => 503;
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${target.url}/raw` } });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  t.equal(target.requests.length, 1);
  for (const [index, step] of [5 * SECOND, MINUTE, 10 * MINUTE, HOUR].entries()) {
    await env.advance(step - 1);
    t.equal(target.requests.length, 1 + index);
    await env.advance(1);
    t.equal(target.requests.length, 2 + index, `retry ${index + 1} on time`);
  }
  await env.advance(10 * HOUR);
  t.equal(target.requests.length, 5);
  const [failed] = env.running.services.delivery.queue.list((j) => j.channel === 'webhook');
  t.match(failed, { state: 'failed', attempt: 5, lastError: 'HTTP 503' });
  t.notOk('authorization' in (target.requests[0]?.headers ?? {}), 'no Authorization header without an authToken');
});

t.test('SSRF: webhook URLs on loopback, private, metadata and v6 loopback addresses are refused without the allow-list', async (t) => {
  const target = await startReceiver(t);
  const env = await deliveryEnv(t, { outboundAllowedNetworks: [] });
  const port = new URL(target.url).port;
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  for (const url of [`http://127.0.0.1:${port}/`, 'http://10.0.0.8/hook', 'http://169.254.169.254/latest/meta-data/', `http://[::1]:${port}/`]) {
    await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url });
  }
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  t.equal(target.requests.length, 0, 'nothing reached the loopback receiver');
  const messages = env.running.services.delivery.endpoints;
  const apiKey = env.creds.apiKey;
  for (const endpoint of messages.all(apiKey)) {
    const [message] = await messages.listMessages(apiKey, endpoint.id, 1);
    t.match(message?.attempts[0]?.response, /BLOCKED|refused/, `${endpoint.url} refused`);
  }
});

t.test('finished job rows are pruned after their retention, pending ones never', async (t) => {
  const target = await startReceiver(t);
  const env = await deliveryEnv(t);
  await env.call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${target.url}/raw` } });
  await env.call('/v1/commentannotations/add', threadBody('a'));
  await env.pump();
  target.answer = () => 500;
  await env.call('/v1/commentannotations/add', threadBody('b'));
  await env.pump();
  const queue = env.running.services.delivery.queue;
  t.same(queue.counts(), { pending: 1, delivered: 1, failed: 0, cancelled: 0 });
  t.equal(await queue.prune(env.clock.now() - 1), 0, 'nothing old enough yet');
  t.equal(await queue.prune(env.clock.now() + 1), 1, 'the delivered row goes');
  t.same(queue.counts(), { pending: 1, delivered: 0, failed: 0, cancelled: 0 }, 'the pending one stays');
});
