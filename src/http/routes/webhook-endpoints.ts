// Owns the advanced webhook endpoint operations (spec 4.3, 4.4; upstream 2.10) and Plait's message/attempt/resend extensions.
import type { Delivery } from '../../delivery/service.js';
import { pageEndpoints, viewEndpoint, type EndpointInput } from '../../delivery/endpoints.js';
import { failedPrecondition, notFound } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import { createEndpointSchema, endpointIdSchema, listEndpointsSchema, listMessagesSchema, messageAttemptsSchema, updateEndpointSchema } from '../schemas/delivery.js';

const NOT_ENABLED =
  'Advanced webhooks are not configured/are disabled for this workspace. Enable them via POST /v2/workspace/advancedwebhookconfig/update with { "isEnabled": true }.';

export function webhookEndpointOperations(delivery: Delivery): Operation[] {
  const { endpoints, configs, clock } = delivery;
  const requireEnabled = (apiKey: string): void => {
    if (configs.stored(apiKey, 'advancedWebhook')?.isEnabled !== true) throw failedPrecondition(NOT_ENABLED);
  };
  return [
    operation<EndpointInput & { url: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/create'],
      auth: 'apiKey',
      schema: createEndpointSchema,
      handle: async (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        return ok('Advanced webhook endpoint created successfully.', viewEndpoint(await endpoints.create(ctx.identity.apiKey, input, clock.now())));
      },
    }),
    operation<{ limit?: number; iterator?: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/get'],
      auth: 'apiKey',
      schema: listEndpointsSchema,
      handle: (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        return ok('Advanced webhook endpoints retrieved successfully.', pageEndpoints(endpoints.all(ctx.identity.apiKey), input.limit ?? 50, input.iterator));
      },
    }),
    operation<EndpointInput & { endpointId: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/update'],
      auth: 'apiKey',
      schema: updateEndpointSchema,
      handle: async (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        const { endpointId, ...fields } = input;
        return ok('Advanced webhook endpoint updated successfully.', viewEndpoint(await endpoints.update(ctx.identity.apiKey, endpointId, fields, clock.now())));
      },
    }),
    operation<{ endpointId: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/delete'],
      auth: 'apiKey',
      schema: endpointIdSchema,
      handle: async (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        await endpoints.remove(ctx.identity.apiKey, input.endpointId);
        return ok('Advanced webhook endpoint deleted successfully.', { endpointId: input.endpointId, deleted: true });
      },
    }),
    operation<{ endpointId: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/secret/get'],
      auth: 'apiKey',
      schema: endpointIdSchema,
      handle: (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        const record = endpoints.require(ctx.identity.apiKey, input.endpointId);
        return ok('Advanced webhook endpoint secret retrieved successfully.', { endpointId: record.id, secret: endpoints.secret(record) });
      },
    }),
    operation<{ endpointId: string; status?: 'pending' | 'success' | 'fail'; limit?: number }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/messages/get'],
      auth: 'apiKey',
      schema: listMessagesSchema,
      handle: async (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        endpoints.require(ctx.identity.apiKey, input.endpointId);
        const messages = (await endpoints.listMessages(ctx.identity.apiKey, input.endpointId, input.limit ?? 50, input.status)).map((m) => ({ id: m.id, eventType: m.eventType, eventId: m.eventId, status: m.status, createdAt: new Date(m.createdAt).toISOString(), attempts: m.attempts.length, payload: JSON.parse(m.body) as unknown }));
        return ok('Advanced webhook messages retrieved successfully.', { messages });
      },
    }),
    operation<{ endpointId: string; messageId: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/messages/attempts/get'],
      auth: 'apiKey',
      schema: messageAttemptsSchema,
      handle: (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        const message = endpoints.message(ctx.identity.apiKey, input.endpointId, input.messageId);
        if (message === undefined) throw notFound(`message ${input.messageId} was not sent to endpoint ${input.endpointId}`);
        return ok('Advanced webhook message attempts retrieved successfully.', { messageId: message.id, status: message.status, attempts: message.attempts });
      },
    }),
    operation<{ endpointId: string; messageId: string }, 'apiKey'>({
      paths: ['/v2/workspace/advancedwebhook/endpoints/messages/resend'],
      auth: 'apiKey',
      schema: messageAttemptsSchema,
      handle: async (input, ctx) => {
        requireEnabled(ctx.identity.apiKey);
        const endpoint = endpoints.require(ctx.identity.apiKey, input.endpointId);
        if (endpoint.disabled) throw failedPrecondition(`endpoint ${endpoint.id} is disabled; enable it before resending`);
        const message = endpoints.message(ctx.identity.apiKey, input.endpointId, input.messageId);
        if (message === undefined) throw notFound(`message ${input.messageId} was not sent to endpoint ${input.endpointId}`);
        await delivery.store.transaction((tx) => delivery.advanced.resend(tx, ctx.identity.apiKey, message, clock.now()));
        delivery.queue.notify();
        return ok('Advanced webhook message resend scheduled.', { endpointId: endpoint.id, messageId: message.id, scheduled: true });
      },
    }),
  ];
}
