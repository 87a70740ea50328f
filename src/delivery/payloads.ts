// Owns the bodies webhooks carry: upstream's WebhookV1Payload (basic) and WebhookV2Payload (advanced), and the encoded variant.
import { commentData } from './comment-event.js';
import type { OutboxEvent } from '../events/types.js';

/** Upstream 3.1. `webhookId` is the event id, the same on every retry. */
export function webhookV1Payload(event: OutboxEvent): Record<string, unknown> {
  const { commentAnnotation, targetComment, actionUser, metadata, oldStatus, newStatus, newPriority, assigned } = commentData(event);
  return {
    webhookId: event.id,
    actionType: event.actionType,
    notificationSource: 'comment',
    commentAnnotation,
    ...(targetComment === undefined ? {} : { targetComment }),
    ...(actionUser === undefined ? {} : { actionUser }),
    metadata: { apiKey: metadata.apiKey, documentId: metadata.documentId, clientDocumentId: metadata.documentId, organizationId: metadata.organizationId, clientOrganizationId: metadata.organizationId },
    ...(oldStatus === undefined ? {} : { oldStatus }),
    ...(newStatus === undefined ? {} : { newStatus }),
    ...(newPriority === undefined ? {} : { newPriority }),
    ...(assigned === undefined ? {} : { assigned }),
    platform: 'sdk',
  };
}

/** Upstream 3.2: `event` is the event type, `actionType` the part after the dot. */
export function webhookV2Payload(event: OutboxEvent, webhookId: string): Record<string, unknown> {
  return {
    event: event.type,
    actionType: event.type.slice(event.type.indexOf('.') + 1),
    source: 'comment',
    data: commentData(event),
    webhookId,
    platform: 'sdk',
  };
}

/** `encodeData`: `{ encodedPayload: base64(JSON) }` (upstream 3.1). */
export function encoded(body: Record<string, unknown>, encode: boolean): string {
  const json = JSON.stringify(body);
  return encode ? JSON.stringify({ encodedPayload: Buffer.from(json).toString('base64') }) : json;
}
