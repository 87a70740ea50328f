// Owns the activity-log operations (spec 4.15, upstream 2.19): add, get (paged), update (per item), delete (per item).
import type { UserRef } from '../../doc/annotations/model.js';
import type { ActivityRecord, FeatureType, ItemOutcome } from '../../delivery/activity-store.js';
import type { Delivery } from '../../delivery/service.js';
import { failedPrecondition, invalidArgument } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import { addActivitiesSchema, deleteActivitiesSchema, getActivitiesSchema, updateActivitiesSchema } from '../schemas/delivery.js';
import { randomUUID } from 'node:crypto';

type EditableFields = Pick<ActivityRecord, 'changes' | 'entityData' | 'entityTargetData' | 'displayMessageTemplate' | 'displayMessageTemplateData' | 'actionIcon'>;

interface AddItem extends Partial<EditableFields> {
  id?: string;
  featureType: FeatureType;
  actionType: string;
  actionUser: UserRef;
  targetEntityId?: string;
  targetSubEntityId?: string;
}

const MESSAGES: Record<'update' | 'delete', Record<ItemOutcome, string>> = {
  update: { done: 'Activity updated.', 'not-found': 'Failed to update activity: not found.', immutable: 'Failed to update activity: it is immutable.' },
  delete: { done: 'Activity deleted.', 'not-found': 'Failed to delete activity: not found.', immutable: 'Failed to delete activity: it is immutable.' },
};

function perItem(results: Record<string, ItemOutcome>, kind: 'update' | 'delete'): Record<string, { success: boolean; message: string }> {
  return Object.fromEntries(Object.entries(results).map(([id, outcome]) => [id, { success: outcome === 'done', message: MESSAGES[kind][outcome] }]));
}

/** The get shape (upstream 2.19) plus the fields spec 2.12 lets callers update, and Plait's `immutable`. */
function view(record: ActivityRecord): Record<string, unknown> {
  const { origin: _origin, ...rest } = record;
  return rest;
}

export function activityOperations(delivery: Delivery): Operation[] {
  const { activities, configs, clock } = delivery;
  return [
    operation<{ organizationId: string; documentId: string; activities: AddItem[] }, 'apiKey'>({
      paths: ['/v2/activities/add'],
      auth: 'apiKey',
      schema: addActivitiesSchema,
      handle: async (input, ctx) => {
        const apiKey = ctx.identity.apiKey;
        if (configs.stored(apiKey, 'activity')?.isEnabled !== true) {
          throw failedPrecondition('Activity logs are not enabled for this workspace: enable them with /v2/workspace/activityconfig/update { activityServiceConfig: { isEnabled: true } }');
        }
        const now = clock.now();
        const records = input.activities.map((item, index): ActivityRecord => {
          if (item.featureType === 'custom' && item.targetEntityId === undefined) throw invalidArgument(`data.activities[${index}].targetEntityId is required when featureType is custom`);
          return {
            id: item.id ?? `act_${randomUUID().replaceAll('-', '')}`,
            featureType: item.featureType,
            actionType: item.actionType,
            actionUser: item.actionUser,
            ...(item.targetEntityId === undefined ? {} : { targetEntityId: item.targetEntityId }),
            ...(item.targetSubEntityId === undefined ? {} : { targetSubEntityId: item.targetSubEntityId }),
            ...(item.changes === undefined ? {} : { changes: item.changes }),
            ...(item.entityData === undefined ? {} : { entityData: item.entityData }),
            ...(item.entityTargetData === undefined ? {} : { entityTargetData: item.entityTargetData }),
            displayMessageTemplate: item.displayMessageTemplate ?? '',
            displayMessageTemplateData: item.displayMessageTemplateData ?? {},
            ...(item.actionIcon === undefined ? {} : { actionIcon: item.actionIcon }),
            metadata: { apiKey, documentId: input.documentId, organizationId: input.organizationId },
            timestamp: now,
            origin: 'api',
            immutable: false,
          };
        });
        const refused = await activities.addAll(records);
        if (refused !== undefined) throw failedPrecondition(`activity ${refused} is immutable and cannot be overwritten`);
        return ok('Activity(s) added successfully.', { success: true, message: 'Activity(s) added successfully.' });
      },
    }),
    operation<{ organizationId: string; documentId?: string; targetEntityId?: string; featureTypes?: string[]; actionTypes?: string[]; userId?: string; activityIds?: string[]; order?: 'asc' | 'desc'; pageSize?: number; pageToken?: string }, 'apiKey'>({
      paths: ['/v2/activities/get'],
      auth: 'apiKey',
      schema: getActivitiesSchema,
      handle: async (input, ctx) => {
        const result = await activities.page(ctx.identity.apiKey, input, { pageSize: input.pageSize ?? 1000, pageToken: input.pageToken, order: input.order });
        return ok('Activities retrieved successfully.', result.rows.map(view), result.pageToken === undefined ? undefined : { pageToken: result.pageToken });
      },
    }),
    operation<{ organizationId: string; activities: Array<{ id: string } & Partial<EditableFields>> }, 'apiKey'>({
      paths: ['/v2/activities/update'],
      auth: 'apiKey',
      schema: updateActivitiesSchema,
      handle: async (input, ctx) => {
        const results = await activities.updateEach(ctx.identity.apiKey, input.organizationId, input.activities.map(({ id, ...fields }) => ({ id, fields })));
        return ok('Activities updated.', perItem(results, 'update'));
      },
    }),
    operation<{ organizationId: string; documentId?: string; targetEntityId?: string; activityIds?: string[] }, 'apiKey'>({
      paths: ['/v2/activities/delete'],
      auth: 'apiKey',
      schema: deleteActivitiesSchema,
      handle: async (input, ctx) => {
        if (input.documentId === undefined && input.targetEntityId === undefined && input.activityIds === undefined) {
          throw invalidArgument('data must carry at least one of documentId, targetEntityId or activityIds');
        }
        // Found in chunks of the time index with event-loop turns between them: an organization may hold millions.
        const matching = await activities.findIds(ctx.identity.apiKey, input);
        const results = await activities.removeEach(ctx.identity.apiKey, input.organizationId, matching);
        for (const id of input.activityIds ?? []) if (!(id in results)) results[id] = 'not-found';
        return ok('Activities deleted.', perItem(results, 'delete'));
      },
    }),
  ];
}
