// Tests recorder.done: recordings/add raises it in its own transaction, to advanced webhooks and to basic ones with the trigger on.
import t from 'tap';
import { startReceiver } from '../helpers/receiver.js';
import { deliveryEnv } from './delivery-env.js';

const where = { organizationId: 'org-r', documentId: 'doc-r' };
const recording = (annotationId: string) => ({
  annotationId,
  recordingType: 'screen',
  recordedTime: { duration: 65_000 },
  from: { userId: 'alice', name: 'Alice' },
  attachments: [
    { url: 'https://cdn.example.com/r1.webm', mimeType: 'video/webm', name: 'r1.webm', size: 1234 },
    { url: 'https://cdn.example.com/r1.png', mimeType: 'image/png', name: 'thumb.png', size: 99 },
    { url: 'https://cdn.example.com/r1.mpg', mimeType: 'video/mpeg', name: 'r1.mpg', size: 5 },
    { url: 'https://cdn.example.com/r1.mp3', mimeType: 'audio/mpeg', name: 'r1.mp3', size: 7 },
  ],
});

t.test('recordings/add raises recorder.done: V2 to an endpoint that names it, V1 to basic webhooks with the trigger on', async (t) => {
  const advanced = await startReceiver(t);
  const basic = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  t.equal((await call('/v2/recordings/add', { ...where, recordings: [recording('before')] })).status, 200);
  await env.pump();
  t.equal((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true })).status, 200);
  t.equal((await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${advanced.url}/hook`, filterTypes: ['recorder.done'] })).status, 200);
  t.equal((await call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${basic.url}/raw` } })).status, 200);

  t.equal((await call('/v2/recordings/add', { ...where, recordings: [recording('rec-1')] })).status, 200);
  t.equal((await call('/v2/recordings/add', { ...where, recordings: [recording('rec-1')] })).status, 200, 'replaced: a second version');
  await env.pump();
  const [first, second] = await advanced.waitFor(2);
  const asset = { version: 1, url: 'https://cdn.example.com/r1.webm', mimeType: 'video/webm', fileName: 'r1.webm', fileSizeInBytes: 1234, fileFormat: 'webm' };
  t.match(JSON.parse(first?.body ?? ''), {
    event: 'recorder.done',
    actionType: 'done',
    source: 'recorder',
    data: { recorderId: 'rec-1', actionUser: { userId: 'alice' }, from: { userId: 'alice', name: 'Alice' }, assets: [asset, { fileName: 'thumb.png', fileFormat: undefined }, { fileName: 'r1.mpg', fileFormat: undefined }, { fileName: 'r1.mp3', fileFormat: 'mp3' }], metadata: { documentId: 'doc-r' } },
  });
  t.match(JSON.parse(second?.body ?? ''), { data: { assets: [{ version: 2 }] } }, 'the replacement is its second version');
  t.equal(advanced.requests.length, 2, 'nothing for the recording added before any channel wanted it');
  t.equal(basic.requests.length, 0, 'basic webhooks: the recorder trigger is seeded off');

  t.equal((await call('/v2/workspace/webhookconfig/update', { webhookServiceConfig: { triggers: { 'recorder.done': true } } })).status, 200);
  t.equal((await call('/v2/recordings/add', { ...where, recordings: [recording('rec-2')] })).status, 200);
  await env.pump();
  const [v1] = await basic.waitFor(1);
  t.match(JSON.parse(v1?.body ?? ''), { actionType: 'done', notificationSource: 'recorder', recorderId: 'rec-2', assets: [asset], metadata: { clientDocumentId: 'doc-r' }, platform: 'sdk' });
});
