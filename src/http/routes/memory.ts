// Owns the Memory alert operations: list (spec 4.6, a bare array), dismiss, action, config get/update (upstream notes 1.11: bare `result`).
import type { AlertConfig } from '../../agents/memory/drift.js';
import type { Memory } from '../../agents/memory/memory.js';
import { bare, operation, type Operation } from '../operation.js';
import { actionAlertSchema, dismissAlertSchema, getAlertConfigSchema, listAlertsSchema, updateAlertConfigSchema } from '../schemas/memory.js';

export function memoryOperations(memory: Memory): Operation[] {
  return [
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/memory/alerts/list'],
      auth: 'apiKey',
      schema: listAlertsSchema,
      handle: (_input, ctx) => bare(memory.list(ctx.identity.apiKey)),
    }),
    operation<{ alertId: string; user?: string }, 'apiKey'>({
      paths: ['/v2/memory/alerts/dismiss'],
      auth: 'apiKey',
      schema: dismissAlertSchema,
      handle: async (input, ctx) => {
        await memory.dismiss(ctx.identity.apiKey, input.alertId, input.user);
        return bare({ success: true });
      },
    }),
    operation<{ alertId: string }, 'apiKey'>({
      paths: ['/v2/memory/alerts/action'],
      auth: 'apiKey',
      schema: actionAlertSchema,
      handle: async (input, ctx) => {
        await memory.action(ctx.identity.apiKey, input.alertId);
        return bare({ success: true });
      },
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/memory/alerts/config/get'],
      auth: 'apiKey',
      schema: getAlertConfigSchema,
      handle: (_input, ctx) => bare(memory.config(ctx.identity.apiKey)),
    }),
    operation<Partial<AlertConfig>, 'apiKey'>({
      paths: ['/v2/memory/alerts/config/update'],
      auth: 'apiKey',
      schema: updateAlertConfigSchema,
      handle: async (input, ctx) => bare(await memory.updateConfig(ctx.identity.apiKey, input)),
    }),
  ];
}
