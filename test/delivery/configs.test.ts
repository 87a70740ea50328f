// Tests each delivery config over REST: seeding and merge rules (spec 3, 4.5, 4.9; upstream 2.5-2.10), every range, prototype keys.
import t from 'tap';
import { apiKeyHeaders } from '../helpers/api.js';
import { deliveryEnv } from './delivery-env.js';
import { triggerOn } from '../../src/tenant/triggers.js';
import { deepMerge } from '../../src/tenant/config-merge.js';

interface EmailView {
  useEmailService: boolean;
  emailServiceConfig: { type: string; apiKey: string; fromEmail: string; fromCompany: string; triggers?: Record<string, boolean> };
}

t.test('email config: defaults, seeding on first enable, kept fields, merge, type values', async (t) => {
  const { call } = await deliveryEnv(t);
  const initial = await call<EmailView>('/v2/workspace/emailconfig/get', {});
  t.same(initial.data, { useEmailService: false, emailServiceConfig: { type: 'default', apiKey: '', fromEmail: '', fromCompany: '', commentTemplateId: '', tagTemplateId: '' } });
  // A non-enabling update stores fields without seeding.
  const named = await call<EmailView>('/v2/workspace/emailconfig/update', { emailServiceConfig: { fromCompany: 'Acme' } });
  t.equal(named.data.useEmailService, false);
  t.equal(named.data.emailServiceConfig.triggers, undefined, 'no triggers seeded before enabling');
  // First enable seeds: type custom, standard comment + huddle triggers, useEmailService true; fromCompany kept; request on top.
  const enabled = await call<EmailView>('/v2/workspace/emailconfig/update', { useEmailService: true, emailServiceConfig: { triggers: { 'comment.add': false } } });
  t.match(enabled.data, { useEmailService: true, emailServiceConfig: { type: 'custom', fromCompany: 'Acme' } });
  t.same(enabled.data.emailServiceConfig.triggers, {
    'comment_annotation.add': true,
    'comment.add': false,
    'comment_annotation.status_change': true,
    'comment_annotation.assign': true,
    'comment_annotation.priority_change': true,
    'huddle.create': true,
    'huddle.join': true,
  });
  // Later updates merge, never reseed.
  const later = await call<EmailView>('/v2/workspace/emailconfig/update', { useEmailService: false, emailServiceConfig: { type: 'default', triggers: { 'comment_annotation.assign': false } } });
  t.match(later.data.emailServiceConfig.triggers, { 'comment.add': false, 'comment_annotation.assign': false, 'comment_annotation.add': true });
  const again = await call<EmailView>('/v2/workspace/emailconfig/update', { useEmailService: true });
  t.equal(again.data.emailServiceConfig.type, 'default', 'an enable with stored triggers does not reseed the type');
  t.same((await call<EmailView>('/v2/workspace/emailconfig/get', {})).data, again.data, 'get returns the post-write state');
});

t.test('email config: type custom alone enables; unknown type and incomplete sendgrid are INVALID_ARGUMENT and change nothing', async (t) => {
  const { call } = await deliveryEnv(t);
  const custom = await call<EmailView>('/v2/workspace/emailconfig/update', { emailServiceConfig: { type: 'custom' } });
  t.match(custom.data, { useEmailService: true, emailServiceConfig: { type: 'custom', triggers: { 'comment.add': true } } });
  const bad = await call('/v2/workspace/emailconfig/update', { emailServiceConfig: { type: 'thirdparty' } });
  t.equal(bad.status, 400);
  t.match(bad.error, { status: 'INVALID_ARGUMENT', message: /emailServiceConfig\.type must be one of default, sendgrid, custom/ });
  const sendgrid = await call('/v2/workspace/emailconfig/update', { emailServiceConfig: { type: 'sendgrid' } });
  t.match(sendgrid.error, { status: 'INVALID_ARGUMENT', message: /apiKey is required for type sendgrid/ });
  t.same((await call<EmailView>('/v2/workspace/emailconfig/get', {})).data, custom.data, 'nothing changed');
  t.match((await call('/v2/workspace/emailconfig/update', {})).error, { status: 'INVALID_ARGUMENT' }, 'at least one field');
  t.match((await call('/v2/workspace/emailconfig/update', { emailServiceConfig: { fromEmail: 'not-an-email' } })).error, { message: /fromEmail/ });
  const ok = await call<EmailView>('/v2/workspace/emailconfig/update', { emailServiceConfig: { type: 'sendgrid', apiKey: 'SG.x' } });
  t.equal(ok.data.emailServiceConfig.type, 'sendgrid');
});

interface ActivityView {
  activityServiceConfig: { isEnabled: boolean; enabledTime?: number; immutable?: boolean; triggers?: { comment: Record<string, boolean> } };
}

t.test('activity config: never configured, seeding, enabledTime kept, isEnabled always present', async (t) => {
  const { call, clock } = await deliveryEnv(t);
  t.same((await call<ActivityView>('/v2/workspace/activityconfig/get', {})).data, { activityServiceConfig: { isEnabled: false } });
  const off = await call<ActivityView>('/v2/workspace/activityconfig/update', { activityServiceConfig: { immutable: false } });
  t.same(off.data, { activityServiceConfig: { immutable: false, isEnabled: false } }, 'isEnabled present although neither side set it');
  const enabled = await call<ActivityView>('/v2/workspace/activityconfig/update', { activityServiceConfig: { isEnabled: true } });
  t.equal(enabled.data.activityServiceConfig.enabledTime, clock.now(), 'enabledTime stamped on enable');
  t.equal(enabled.data.activityServiceConfig.immutable, true, 'seeded immutable');
  t.equal(enabled.data.activityServiceConfig.triggers?.comment['comment_annotation.suggestion_accept'], true);
  t.equal(enabled.data.activityServiceConfig.triggers?.comment['comment_annotation.suggestion_reject'], true);
  t.equal(enabled.data.activityServiceConfig.triggers?.comment['comment.add'], true);
  clock.advance(60_000);
  const merged = await call<ActivityView>('/v2/workspace/activityconfig/update', { activityServiceConfig: { triggers: { comment: { 'comment_annotation.suggestion_reject': false } } } });
  t.equal(merged.data.activityServiceConfig.enabledTime, enabled.data.activityServiceConfig.enabledTime, 'enabledTime preserved when omitted');
  t.equal(merged.data.activityServiceConfig.triggers?.comment['comment_annotation.suggestion_reject'], false);
  t.equal(merged.data.activityServiceConfig.triggers?.comment['comment_annotation.suggestion_accept'], true, 'deep merge keeps siblings');
  const explicit = await call<ActivityView>('/v2/workspace/activityconfig/update', { activityServiceConfig: { enabledTime: 1234 } });
  t.equal(explicit.data.activityServiceConfig.enabledTime, 1234);
  t.match((await call('/v2/workspace/activityconfig/update', { activityServiceConfig: {} })).error, { status: 'INVALID_ARGUMENT', message: /activityServiceConfig/ });
  t.match((await call('/v2/workspace/activityconfig/update', {})).error, { status: 'INVALID_ARGUMENT', message: /activityServiceConfig is required/ });
});

t.test('basic webhook config: defaults, seeding on first enable, URL checks', async (t) => {
  const { call } = await deliveryEnv(t);
  type View = { useWebhookService: boolean; webhookServiceConfig: { authToken: string; rawNotificationUrl: string; triggers?: Record<string, boolean>; enableDataProtection?: boolean } };
  t.same((await call<View>('/v2/workspace/webhookconfig/get', {})).data, { useWebhookService: false, webhookServiceConfig: { authToken: '', rawNotificationUrl: '', processedNotificationUrl: '' } });
  const enabled = await call<View>('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw' } });
  t.match(enabled.data, { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw', enableDataProtection: false } });
  t.match(enabled.data.webhookServiceConfig.triggers, {
    'comment.add': true,
    'comment_annotation.add': true,
    'comment_annotation.suggestion_accept': false,
    'comment_annotation.suggestion_reject': false,
    'huddle.create': true,
    'crdt.update_data': false,
    'recorder.done': false,
  });
  t.match((await call('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { rawNotificationUrl: 'ftp://x' } })).error, { status: 'INVALID_ARGUMENT', message: /rawNotificationUrl/ });
  const cleared = await call<View>('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { rawNotificationUrl: '' } });
  t.equal(cleared.data.webhookServiceConfig.rawNotificationUrl, '', 'an empty URL turns that destination off');
  t.equal(cleared.data.webhookServiceConfig.triggers?.['comment.add'], true, 'not reseeded');
});

t.test('notification config: defaults, seeding, and every range bound; a rejected update changes nothing', async (t) => {
  const { call } = await deliveryEnv(t);
  const defaults = await call('/v2/workspace/notificationconfig/get', {});
  t.same(defaults.data, {
    useNotificationService: false,
    notificationServiceConfig: {
      triggers: { comment: {}, huddle: {} },
      delayConfig: { isEnabled: false, delaySeconds: 10 },
      batchConfig: { document: { isEnabled: false, batchWindowSeconds: 10, maxActivities: 2 }, user: { isEnabled: false, batchWindowSeconds: 10, maxActivities: 2 } },
    },
  });
  const enabled = await call<{ notificationServiceConfig: { triggers: { comment: Record<string, boolean>; huddle: Record<string, boolean> }; delayConfig: { isEnabled: boolean } } }>('/v2/workspace/notificationconfig/update', { useNotificationService: true });
  t.equal(enabled.data.notificationServiceConfig.triggers.comment['comment.add'], true);
  t.equal(enabled.data.notificationServiceConfig.triggers.comment['comment_annotation.suggestion_accept'], undefined, 'suggestions are opt-in');
  t.same(enabled.data.notificationServiceConfig.triggers.huddle, { created: true, join: true });
  t.equal(enabled.data.notificationServiceConfig.delayConfig.isEnabled, false, 'delay stays off');
  const cases: Array<[string, unknown, boolean]> = [
    ['delaySeconds 9', { delayConfig: { delaySeconds: 9 } }, false],
    ['delaySeconds 10', { delayConfig: { delaySeconds: 10 } }, true],
    ['delaySeconds 15552000', { delayConfig: { delaySeconds: 15_552_000 } }, true],
    ['delaySeconds 15552001', { delayConfig: { delaySeconds: 15_552_001 } }, false],
    ['delaySeconds 10.5', { delayConfig: { delaySeconds: 10.5 } }, false],
    ['document batchWindowSeconds 9', { batchConfig: { document: { batchWindowSeconds: 9 } } }, false],
    ['document batchWindowSeconds 604800', { batchConfig: { document: { batchWindowSeconds: 604_800 } } }, true],
    ['user batchWindowSeconds 604801', { batchConfig: { user: { batchWindowSeconds: 604_801 } } }, false],
    ['user batchWindowSeconds 10', { batchConfig: { user: { batchWindowSeconds: 10 } } }, true],
    ['document maxActivities 1', { batchConfig: { document: { maxActivities: 1 } } }, false],
    ['document maxActivities 2', { batchConfig: { document: { maxActivities: 2 } } }, true],
    ['user maxActivities 50', { batchConfig: { user: { maxActivities: 50 } } }, true],
    ['user maxActivities 51', { batchConfig: { user: { maxActivities: 51 } } }, false],
  ];
  for (const [name, change, accepted] of cases) {
    const before = (await call('/v2/workspace/notificationconfig/get', {})).data;
    const result = await call('/v2/workspace/notificationconfig/update', { useNotificationService: true, notificationServiceConfig: change });
    if (accepted) {
      t.equal(result.status, 200, `${name} accepted`);
    } else {
      t.match(result.error, { status: 'INVALID_ARGUMENT' }, `${name} refused`);
      t.same((await call('/v2/workspace/notificationconfig/get', {})).data, before, `${name}: nothing changed`);
    }
  }
  t.match((await call('/v2/workspace/notificationconfig/update', {})).error, { status: 'INVALID_ARGUMENT' });
});

t.test('notification triggers accept both vocabularies (upstream 2.6)', async (t) => {
  t.equal(triggerOn({ added: true }, 'comment.add'), true);
  t.equal(triggerOn({ newlyAdded: true }, 'comment_annotation.add'), true);
  t.equal(triggerOn({ 'comment.add': false, added: true }, 'comment.add'), false, 'the event-type key wins');
  t.equal(triggerOn({ statusChanged: true }, 'comment_annotation.status_change'), true);
  t.equal(triggerOn({}, 'comment.add'), false);
  t.equal(triggerOn(undefined, 'comment.add'), false);
});

t.test('advanced webhook config: the first update must enable; until then endpoint operations are FAILED_PRECONDITION', async (t) => {
  const { call } = await deliveryEnv(t);
  t.same((await call('/v2/workspace/advancedwebhookconfig/get', {})).data, { isEnabled: false, encryptData: false, encodeData: false, publicKey: '', enableDataProtection: false });
  for (const [path, data] of [
    ['/v2/workspace/advancedwebhook/endpoints/get', {}],
    ['/v2/workspace/advancedwebhook/endpoints/create', { url: 'https://example.com/hook' }],
    ['/v2/workspace/advancedwebhook/endpoints/update', { endpointId: 'ep_x', disabled: true }],
    ['/v2/workspace/advancedwebhook/endpoints/delete', { endpointId: 'ep_x' }],
    ['/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: 'ep_x' }],
  ] as const) {
    t.match((await call(path, data)).error, { status: 'FAILED_PRECONDITION' }, path);
  }
  t.match((await call('/v2/workspace/advancedwebhookconfig/update', { encodeData: true })).error, { status: 'FAILED_PRECONDITION', message: /isEnabled/ });
  t.match((await call('/v2/workspace/advancedwebhookconfig/update', {})).error, { status: 'INVALID_ARGUMENT' });
  t.match((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true, encryptData: true })).error, { status: 'INVALID_ARGUMENT', message: /data\.publicKey must be an RSA public key/ }, 'encryption needs a key');
  t.match((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).data, { isEnabled: true, encodeData: false });
  t.match((await call('/v2/workspace/advancedwebhookconfig/update', { encodeData: true })).data, { isEnabled: true, encodeData: true }, 'partial once enabled');
  t.equal((await call('/v2/workspace/advancedwebhook/endpoints/get', {})).status, 200);
  t.match((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: false })).data, { isEnabled: false });
  t.match((await call('/v2/workspace/advancedwebhook/endpoints/get', {})).error, { status: 'FAILED_PRECONDITION' }, 'disabled again');
});

t.test('__proto__, constructor and prototype keys in a config body change nothing else', async (t) => {
  const env = await deliveryEnv(t);
  const raw = '{"data":{"useEmailService":true,"__proto__":{"useEmailService":false,"polluted":true},"emailServiceConfig":{"fromCompany":"Acme","__proto__":{"type":"sendgrid"},"constructor":{"prototype":{"polluted":true}},"triggers":{"__proto__":{"comment.add":false}}}}}';
  const response = await env.server.api.send<EmailView>('/v2/workspace/emailconfig/update', raw, apiKeyHeaders(env.creds));
  t.equal(response.status, 200);
  const data = response.body.result?.data;
  t.match(data, { useEmailService: true, emailServiceConfig: { type: 'custom', fromCompany: 'Acme', triggers: { 'comment.add': true } } });
  t.notOk(Object.hasOwn(data?.emailServiceConfig ?? {}, 'constructor'), 'no constructor key stored');
  t.equal(({} as Record<string, unknown>)['polluted'], undefined, 'Object.prototype untouched');
  const activity = await env.server.api.send('/v2/workspace/activityconfig/update', '{"data":{"activityServiceConfig":{"isEnabled":true,"__proto__":{"isEnabled":false},"triggers":{"comment":{"prototype":true}}}}}', apiKeyHeaders(env.creds));
  t.match(activity.body.result?.data, { activityServiceConfig: { isEnabled: true } });
  t.equal((await env.call<EmailView>('/v2/workspace/emailconfig/get', {})).data.emailServiceConfig.type, 'custom');
  // The merge itself, directly: an own __proto__ key (as JSON.parse makes) is skipped at every depth.
  const merged = deepMerge({ a: { b: 1 } }, JSON.parse('{"a":{"__proto__":{"x":1},"c":2},"__proto__":{"y":1}}'));
  t.same(merged, { a: { b: 1, c: 2 } });
  t.equal(Object.getPrototypeOf(merged), Object.prototype);
});
