// Tests the whole pipeline over REST: one comment reaches SMTP, the basic webhook, a signed advanced webhook, notifications and activity logs.
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { startReceiver } from '../helpers/receiver.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { messageIdOf } from '../../src/delivery/channels/email.js';
import { alice, deliveryEnv, scope, threadBody } from './delivery-env.js';

t.test('a comment added over REST is delivered on every configured channel', async (t) => {
  const sink = await startSmtpSink(t);
  const basic = await startReceiver(t);
  const advanced = await startReceiver(t);
  const env = await deliveryEnv(t, { smtpUrl: sink.url, emailFrom: 'Plait <no-reply@plait.test>' });
  const { call } = env;

  t.equal((await call('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { fromEmail: 'review@acme.test', fromCompany: 'Acme' } })).status, 200);
  t.equal((await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { authToken: 'tok123', rawNotificationUrl: `${basic.url}/raw`, processedNotificationUrl: `${basic.url}/processed` } })).status, 200);
  t.equal((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  const endpoint = await call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${advanced.url}/hook`, filterTypes: ['comment_annotation.add'] });
  t.equal(endpoint.status, 200);
  const secret = await call<{ secret: string }>('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: endpoint.data.id });
  t.match(secret.data.secret, /^whsec_/);
  t.equal((await call('/v2/workspace/notificationconfig/update', { useNotificationService: true })).status, 200);
  t.equal((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } })).status, 200);

  const added = await call('/v1/commentannotations/add', threadBody());
  t.equal(added.status, 200);
  await env.pump();

  // Email: Bob (mentioned) and Carol (assignee); never Alice, who wrote it.
  const mails = await sink.waitFor(2);
  t.same(mails.map((m) => m.envelopeTo[0]).sort(), ['bob@example.com', 'carol@example.com']);
  const toBob = mails.find((m) => m.envelopeTo[0] === 'bob@example.com');
  t.equal(toBob?.parsed.from?.value[0]?.address, 'review@acme.test');
  t.equal(toBob?.parsed.from?.value[0]?.name, 'Acme');
  t.match(toBob?.parsed.subject, /Alice started a comment thread/);
  t.match(toBob?.parsed.text, /Please check this, @bob/);
  t.match(toBob?.parsed.html, /<blockquote>Please check this, @bob<\/blockquote>/);
  t.match(toBob?.parsed.text, /You were mentioned/);
  // The Message-ID derives from the delivery job, so a send repeated after a crash (docs/cluster.md) carries the same one.
  const ids = env.running.services.delivery.queue.list((j) => j.channel === 'email').map((j) => messageIdOf(j.id, 'review@acme.test'));
  t.ok(toBob?.parsed.messageId !== undefined && ids.includes(toBob.parsed.messageId), `Message-ID ${String(toBob?.parsed.messageId)} is the job's`);

  // Basic webhook: raw and processed, each with the auth header and the V1 payload.
  const posts = await basic.waitFor(2);
  t.same(posts.map((p) => p.path).sort(), ['/processed', '/raw']);
  for (const post of posts) {
    t.equal(post.headers.authorization, 'Basic tok123');
    const body = JSON.parse(post.body) as { actionType: string; notificationSource: string; commentAnnotation: { annotationId: string }; actionUser: { userId: string }; webhookId: string };
    t.match(body, { actionType: 'newlyAdded', notificationSource: 'comment', commentAnnotation: { annotationId: 'thread-1' }, actionUser: { userId: 'alice' } });
  }

  // Advanced webhook: the standardwebhooks package verifies the signature.
  const [delivery] = await advanced.waitFor(1);
  const verified = new Webhook(secret.data.secret).verify(delivery?.body ?? '', {
    'webhook-id': String(delivery?.headers['webhook-id']),
    'webhook-timestamp': String(delivery?.headers['webhook-timestamp']),
    'webhook-signature': String(delivery?.headers['webhook-signature']),
  }) as { event: string; actionType: string; webhookId: string; data: { commentAnnotation: { annotationId: string } } };
  t.match(verified, { event: 'comment_annotation.add', actionType: 'add', data: { commentAnnotation: { annotationId: 'thread-1' } } });
  t.equal(verified.webhookId, delivery?.headers['webhook-id'], 'the body names the message id the headers sign');

  // In-app notification for the users concerned, via Get Notifications (v1, spec 4.23).
  const forBob = await call<Array<{ notificationSource: string; notifyUsersByUserId: Record<string, boolean>; actionUser: { userId: string }; metadata: Record<string, string>; displayHeadlineMessageTemplate: string }>>('/v1/notifications/get', { ...scope, userId: 'bob' });
  t.equal(forBob.status, 200);
  t.equal(forBob.data.length, 1);
  t.match(forBob.data[0], { notificationSource: 'comment', notifyUsersByUserId: { bob: true, carol: true }, actionUser: { userId: 'alice' }, metadata: scope, displayHeadlineMessageTemplate: '{actionUser} started a comment thread' });
  t.same((await call<unknown[]>('/v1/notifications/get', { ...scope, userId: 'alice' })).data, [], 'the actor gets no notification');

  // Activity log.
  const logs = await call<Array<{ actionType: string; featureType: string; targetEntityId: string; actionUser: { userId: string }; immutable: boolean }>>('/v2/activities/get', { organizationId: scope.organizationId });
  t.equal(logs.data.length, 1);
  t.match(logs.data[0], { actionType: 'comment_annotation.add', featureType: 'comment', targetEntityId: 'thread-1', actionUser: alice, immutable: true });

  // Nothing pending, nothing failed; the outbox is empty.
  t.same(env.running.services.delivery.queue.counts(), { pending: 0, delivered: 5, failed: 0, cancelled: 0 });
  t.same(env.running.services.outbox.read(), []);
});

t.test('with no channel configured a comment leaves nothing behind', async (t) => {
  const env = await deliveryEnv(t);
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  t.same(env.running.services.delivery.queue.counts(), { pending: 0, delivered: 0, failed: 0, cancelled: 0 });
  t.same(env.running.services.outbox.read(), [], 'the event was still consumed');
  t.same((await env.call<unknown[]>('/v2/activities/get', { organizationId: 'org1' })).data, []);
});

t.test('email type sendgrid sends through the SendGrid v3 API (a local fake) with the configured key', async (t) => {
  const sendgrid = await startReceiver(t);
  sendgrid.answer = () => 202;
  const env = await deliveryEnv(t, { sendgridBaseUrl: sendgrid.url });
  await env.call('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { type: 'sendgrid', apiKey: 'SG.workspace-key', fromEmail: 'review@acme.test' } });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  const requests = await sendgrid.waitFor(2);
  for (const request of requests) {
    t.equal(request.path, '/v3/mail/send');
    t.equal(request.headers.authorization, 'Bearer SG.workspace-key');
  }
  const bodies = requests.map((r) => JSON.parse(r.body) as { personalizations: Array<{ to: Array<{ email: string }> }>; from: { email: string } });
  t.same(bodies.map((b) => b.personalizations[0]?.to[0]?.email).sort(), ['bob@example.com', 'carol@example.com']);
  t.equal(bodies[0]?.from.email, 'review@acme.test');
});

t.test('an email to an address the SMTP server refuses for good ends failed at once, visibly', async (t) => {
  const sink = await startSmtpSink(t);
  sink.failNext(2, 550);
  const env = await deliveryEnv(t, { smtpUrl: sink.url });
  await env.call('/v2/workspace/emailconfig/update', { useEmailService: true });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  const failed = env.running.services.delivery.queue.list((j) => j.channel === 'email');
  t.same(failed.map((j) => [j.state, j.attempt]), [['failed', 1], ['failed', 1]], 'no retry of a permanent refusal');
  t.match(failed[0]?.lastError, /550|try later/);
});

t.test('a user whose email preference is NONE gets no email; the others still do', async (t) => {
  const sink = await startSmtpSink(t);
  const env = await deliveryEnv(t, { smtpUrl: sink.url });
  await env.call('/v2/workspace/emailconfig/update', { useEmailService: true });
  await env.call('/v2/notifications/config/set', { organizationId: 'org1', userIds: ['bob'], config: { email: 'NONE' } });
  await env.call('/v1/commentannotations/add', threadBody());
  await env.pump();
  const mails = await sink.waitFor(1);
  t.same(mails.map((m) => m.envelopeTo[0]), ['carol@example.com']);
  t.same(env.running.services.delivery.queue.counts(), { pending: 0, delivered: 1, failed: 0, cancelled: 0 }, 'no job was planned for bob');
});
