// Tests webhook bodies as configured: plain, encoded (`encodeData`) and sealed to the workspace's RSA key (`encryptData`), basic and advanced.
import { constants, createDecipheriv, generateKeyPairSync, privateDecrypt, type KeyObject } from 'node:crypto';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { startReceiver } from '../helpers/receiver.js';
import { deliveryEnv, threadBody } from './delivery-env.js';

function rsaKeys(bits: number): { publicKey: string; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  // As upstream asks for it: base64 of the DER, no PEM headers.
  return { publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), privateKey };
}

/** What a receiver does with a sealed body: unseal the AES key with its private key, then decrypt. */
function unseal(body: string, privateKey: KeyObject): unknown {
  const sealed = JSON.parse(body) as { encryptedData: string; encryptedKey: string; iv: string };
  const key = privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, Buffer.from(sealed.encryptedKey, 'base64'));
  const decipher = createDecipheriv('aes-256-cbc', key, Buffer.from(sealed.iv, 'base64'));
  return JSON.parse(Buffer.concat([decipher.update(Buffer.from(sealed.encryptedData, 'base64')), decipher.final()]).toString('utf8')) as unknown;
}

t.test('basic webhooks: encodeData sends base64 of the payload, encryptData seals it to the workspace key', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  const keys = rsaKeys(2048);
  const config = (webhookServiceConfig: Record<string, unknown>) => call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: `${receiver.url}/raw`, ...webhookServiceConfig } });

  t.equal((await config({ encodeData: true })).status, 200);
  t.equal((await call('/v1/commentannotations/add', threadBody('encoded'))).status, 200);
  await env.pump();
  const [encoded] = await receiver.waitFor(1);
  const decoded = JSON.parse(Buffer.from((JSON.parse(encoded?.body ?? '') as { encodedPayload: string }).encodedPayload, 'base64').toString('utf8')) as unknown;
  t.match(decoded, { actionType: 'newlyAdded', notificationSource: 'comment', commentAnnotation: { annotationId: 'encoded' } }, 'encodedPayload is base64 of the V1 payload');

  t.match((await config({ encryptData: true })).error, { status: 'INVALID_ARGUMENT', message: /data\.webhookServiceConfig\.publicKey must be an RSA public key/ }, 'no key, no encryption');
  t.equal((await config({ encryptData: true, publicKey: keys.publicKey })).status, 200);
  t.match((await call('/v2/workspace/webhookconfig/get', {})).data, { webhookServiceConfig: { encryptData: true, publicKey: keys.publicKey } }, 'get shows the key');
  t.equal((await call('/v1/commentannotations/add', threadBody('sealed'))).status, 200);
  await env.pump();
  const sealed = (await receiver.waitFor(2))[1];
  t.same(Object.keys(JSON.parse(sealed?.body ?? '{}') as object).sort(), ['encryptedData', 'encryptedKey', 'iv'], 'a sealed body holds the three fields only');
  t.notMatch(sealed?.body, /sealed|newlyAdded|alice/, 'nothing of the payload is readable on the wire');
  t.match(unseal(sealed?.body ?? '', keys.privateKey), { actionType: 'newlyAdded', commentAnnotation: { annotationId: 'sealed' }, actionUser: { userId: 'alice' } }, 'the private key opens the V1 payload (encryption wins over encodeData)');
});

t.test('advanced webhooks: a sealed body is what the Standard Webhooks signature covers', async (t) => {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  const keys = rsaKeys(3072);
  t.equal((await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true, encryptData: true, publicKey: keys.publicKey })).status, 200);
  const endpoint = await call<{ id: string }>('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
  const secret = await call<{ secret: string }>('/v2/workspace/advancedwebhook/endpoints/secret/get', { endpointId: endpoint.data.id });
  t.equal((await call('/v1/commentannotations/add', threadBody('v2-sealed'))).status, 200);
  await env.pump();
  const [delivery] = await receiver.waitFor(1);
  const headers = { 'webhook-id': String(delivery?.headers['webhook-id']), 'webhook-timestamp': String(delivery?.headers['webhook-timestamp']), 'webhook-signature': String(delivery?.headers['webhook-signature']) };
  const verified = new Webhook(secret.data.secret).verify(delivery?.body ?? '', headers);
  t.match(verified, { encryptedData: String, encryptedKey: String, iv: String }, 'the standardwebhooks verifier accepts the sealed body');
  t.match(unseal(delivery?.body ?? '', keys.privateKey), { event: 'comment_annotation.add', actionType: 'add', webhookId: headers['webhook-id'], data: { commentAnnotation: { annotationId: 'v2-sealed' } } });
});

t.test('keys are checked when encryption is on: kind, size, format; turning it off needs no key', async (t) => {
  const { call } = await deliveryEnv(t);
  const update = (data: Record<string, unknown>) => call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true, ...data });
  const small = rsaKeys(1024).publicKey;
  t.match((await update({ encryptData: true, publicKey: small })).error, { status: 'INVALID_ARGUMENT', message: 'data.publicKey is a 1024-bit RSA key; at least 2048 bits are required' });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  t.match((await update({ encryptData: true, publicKey: ec })).error, { status: 'INVALID_ARGUMENT', message: /data\.publicKey must be an RSA key .* not ec/ });
  t.match((await update({ encryptData: true, publicKey: 'not a key!' })).error, { status: 'INVALID_ARGUMENT', message: /data\.publicKey must be an RSA public key/ });
  const good = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
  const pkcs1 = good.export({ format: 'der', type: 'pkcs1' }).toString('base64');
  t.equal((await update({ encryptData: true, publicKey: pkcs1 })).status, 200, 'PKCS#1 DER is read');
  t.equal((await update({ publicKey: good.export({ format: 'pem', type: 'spki' }) as string })).status, 200, 'a PEM block is read too');
  t.match((await update({ publicKey: 'garbage' })).error, { status: 'INVALID_ARGUMENT', message: /data\.publicKey/ }, 'a new key is checked while encryption is on');
  t.match((await update({ encryptData: false, publicKey: '' })).data, { encryptData: false, publicKey: '' }, 'off needs no key');
  t.match((await call('/v2/workspace/advancedwebhookconfig/get', {})).data, { encryptData: false });
});
