// Owns the bodies webhooks carry: upstream's WebhookV1Payload (basic) and WebhookV2Payload (advanced), and their encoded and encrypted variants.
import { constants, createCipheriv, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';
import { payloadKeyOf } from '../tenant/payload-key.js';
import { crdtData } from '../doc/crdt-events.js';
import type { RecorderPayload } from '../doc/recordings.js';
import { commentData } from './comment-event.js';
import { V1_ACTION, type OutboxEvent } from '../events/types.js';

/** Upstream 3.1 (V1 `metadata`, both id spellings). */
function v1Metadata(event: OutboxEvent): Record<string, string> {
  return { apiKey: event.apiKey, documentId: event.documentId, clientDocumentId: event.documentId, organizationId: event.organizationId, clientOrganizationId: event.organizationId };
}

/** Upstream 3.1. `webhookId` is the event id, the same on every retry. */
export function webhookV1Payload(event: OutboxEvent): Record<string, unknown> {
  if (event.source === 'crdt') {
    const { crdtData: record, actionUser } = crdtData(event.data);
    return { webhookId: event.id, actionType: event.actionType, notificationSource: 'crdt', actionUser, metadata: v1Metadata(event), crdtData: record, platform: 'sdk' };
  }
  if (event.source === 'recorder') {
    // The recorder's fields as they are (recorderId, from, assets), upstream's V1 frame around them.
    const { metadata: _metadata, ...recorder } = event.data as RecorderPayload;
    return { webhookId: event.id, actionType: event.actionType, notificationSource: 'recorder', ...recorder, metadata: v1Metadata(event), platform: 'sdk' };
  }
  const { commentAnnotation, targetComment, actionUser, oldStatus, newStatus, newPriority, assigned } = commentData(event);
  return {
    webhookId: event.id,
    actionType: event.actionType,
    notificationSource: 'comment',
    commentAnnotation,
    ...(targetComment === undefined ? {} : { targetComment }),
    ...(actionUser === undefined ? {} : { actionUser }),
    metadata: v1Metadata(event),
    ...(oldStatus === undefined ? {} : { oldStatus }),
    ...(newStatus === undefined ? {} : { newStatus }),
    ...(newPriority === undefined ? {} : { newPriority }),
    ...(assigned === undefined ? {} : { assigned }),
    platform: 'sdk',
  };
}

/**
 * Upstream 3.2: `event` is the event type, `actionType` the part after the dot for comment events, and the V1 name
 * for the others (`crdt.update_data`: upstream's `updateData`, its example of a V2 action type; `recorder.done`: `done`).
 */
export function webhookV2Payload(event: OutboxEvent, webhookId: string): Record<string, unknown> {
  return {
    event: event.type,
    actionType: event.source === 'comment' ? event.type.slice(event.type.indexOf('.') + 1) : V1_ACTION[event.type],
    source: event.source,
    data: event.data,
    webhookId,
    platform: 'sdk',
  };
}

/** How a webhook config asks its bodies to be written (`encodeData`, `encryptData` with `publicKey`). */
export interface BodyOptions {
  readonly encodeData?: boolean | undefined;
  readonly encryptData?: boolean | undefined;
  readonly publicKey?: string | undefined;
}

/**
 * The body as sent (upstream 3.1; advanced webhooks the same): the payload's JSON; with `encodeData`,
 * `{ encodedPayload: base64(JSON) }`; with `encryptData`, `{ encryptedData, encryptedKey, iv }` sealed to `publicKey`
 * (which then wins over `encodeData`: the sealed JSON is the payload itself). Written once, when the delivery is
 * planned: every retry sends the same bytes, so a signature or a receiver's dedupe sees one message.
 */
export function webhookBody(payload: Record<string, unknown>, options: BodyOptions, keyField: string): string {
  const json = JSON.stringify(payload);
  if (options.encryptData === true) return sealed(json, payloadKeyOf(options.publicKey ?? '', keyField));
  return options.encodeData === true ? JSON.stringify({ encodedPayload: Buffer.from(json).toString('base64') }) : json;
}

/**
 * Upstream 3.1: the JSON under AES-256-CBC (PKCS#7 padding) with a fresh key and IV per body, the key sealed with
 * RSA-OAEP (SHA-256) to the workspace's public key; all three base64. A receiver unseals the key with its private key
 * and decrypts; nothing of the payload is readable without it.
 */
function sealed(json: string, publicKey: KeyObject): string {
  const key = randomBytes(32);
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', key, iv);
  const encryptedData = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
  const encryptedKey = publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, key);
  return JSON.stringify({ encryptedData: encryptedData.toString('base64'), encryptedKey: encryptedKey.toString('base64'), iv: iv.toString('base64') });
}
