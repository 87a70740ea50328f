// Owns Standard Webhooks signing: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` with a whsec_ secret.
import { createHmac } from 'node:crypto';

export function sign(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const digest = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${digest}`;
}

export function signedHeaders(secret: string, messageId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': sign(secret, messageId, timestampSeconds, body),
  };
}
