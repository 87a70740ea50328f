// Owns the activity-log channel: events recorded as activity logs when the activity config enables their trigger.
import { commentData } from '../comment-event.js';
import type { WriteTx } from '../../store/env.js';
import type { EventType, OutboxEvent } from '../../events/types.js';
import type { DeliveryConfigStore } from '../../tenant/delivery-config-store.js';
import { triggerOn } from '../../tenant/triggers.js';
import type { ActivityRecord, ActivityStore } from '../activity-store.js';
import type { Planner } from '../channel.js';
import { activityTemplate, templateValues } from '../templates.js';

export class ActivityChannel implements Planner {
  readonly name = 'activity';

  constructor(private readonly deps: { readonly configs: DeliveryConfigStore; readonly activities: ActivityStore }) {}

  wants(apiKey: string, type: EventType): boolean {
    const config = this.deps.configs.stored(apiKey, 'activity');
    return config !== undefined && config.isEnabled && triggerOn(config.triggers?.comment, type);
  }

  /** Written in the planning transaction: a local record needs no retry queue. Its id comes from the event, so replanning overwrites. */
  plan(tx: WriteTx, event: OutboxEvent, _now: number): void {
    const config = this.deps.configs.stored(event.apiKey, 'activity');
    if (config === undefined || !this.wants(event.apiKey, event.type)) return;
    // Events raised before logging was (re-)enabled are not logged.
    if (config.enabledTime !== undefined && event.createdAt < config.enabledTime) return;
    this.deps.activities.put(tx, activityFromEvent(event, config.immutable !== false));
  }
}

export function activityFromEvent(event: OutboxEvent, immutable: boolean): ActivityRecord {
  const data = commentData(event);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  if (data.oldStatus !== undefined || data.newStatus !== undefined) changes.status = { from: data.oldStatus ?? null, to: data.newStatus ?? null };
  if (event.type === 'comment_annotation.priority_change') changes.priority = { from: null, to: data.newPriority ?? null };
  if (event.type === 'comment_annotation.assign') changes.assignedTo = { from: null, to: data.commentAnnotation.assignedTo ?? null };
  if (event.type === 'comment.update' && data.targetComment !== undefined) changes.commentText = { from: null, to: data.targetComment.commentText };
  const comment = data.targetComment;
  return {
    id: `act_${event.id.replace(/^evt_/, '')}`,
    featureType: 'comment',
    actionType: event.type,
    actionUser: data.actionUser ?? { userId: 'unknown' },
    targetEntityId: data.commentAnnotation.annotationId,
    ...(comment === undefined ? {} : { targetSubEntityId: String(comment.commentId) }),
    ...(Object.keys(changes).length === 0 ? {} : { changes }),
    entityData: data.commentAnnotation,
    ...(comment === undefined ? {} : { entityTargetData: comment }),
    displayMessageTemplate: activityTemplate(event.type),
    displayMessageTemplateData: { ...templateValues(event), ...(data.actionUser === undefined ? {} : { user: data.actionUser }) },
    metadata: { apiKey: event.apiKey, documentId: event.documentId, organizationId: event.organizationId },
    timestamp: event.createdAt,
    origin: 'event',
    immutable,
  };
}
