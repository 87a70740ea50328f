// Owns the activity-log channel: events recorded as activity logs when the activity config enables their trigger.
import { commentData } from '../comment-event.js';
import type { WriteTx } from '../../store/env.js';
import { isCommentEvent, type EventRecorder, type EventType, type OutboxEvent, type StampedEvent } from '../../events/types.js';
import type { ActivityConfig } from '../../tenant/delivery-configs.js';
import type { DeliveryConfigStore } from '../../tenant/delivery-config-store.js';
import { triggerOn } from '../../tenant/triggers.js';
import type { ActivityRecord, ActivityStore } from '../activity-store.js';
import { eventRecordKeysFit } from '../organization-records.js';
import type { Planner } from '../channel.js';
import { activityTemplate, templateValues } from '../templates.js';

/**
 * A recorder of the outbox (`Outbox.setRecorders`): a comment's activity record is written in the comment's own
 * transaction, so the dispatcher never needs to plan one (`dispatches`). It is still a planner, for outbox rows raised
 * before that (`recordedBy` without it), which it records as the dispatcher plans them. The config is read through
 * the copy the config store keeps (`DeliveryConfigStore.current`), since every comment asks.
 */
export class ActivityChannel implements Planner, EventRecorder {
  readonly name = 'activity';

  constructor(private readonly deps: { readonly configs: DeliveryConfigStore; readonly activities: ActivityStore }) {}

  wants(apiKey: string, type: EventType): boolean {
    return logs(this.deps.configs.current(apiKey, 'activity'), type);
  }

  /** Everything it keeps is recorded with the change. */
  dispatches(): boolean {
    return false;
  }

  /** Written with the change that raised the event: its id comes from the new event, so none is stored yet. */
  record(tx: WriteTx, event: StampedEvent): void {
    this.write(tx, event, true);
  }

  /** `raised`: at the event's raise (a new id); else a replan, which overwrites a record of the same id. */
  private write(tx: WriteTx, event: StampedEvent, raised: boolean): void {
    const config = this.deps.configs.current(event.apiKey, 'activity');
    if (config === undefined || !logs(config, event.type)) return;
    // Events raised before logging was (re-)enabled are not logged.
    if (config.enabledTime !== undefined && event.createdAt < config.enabledTime) return;
    const record = activityFromEvent(event, config.immutable !== false);
    if (raised) this.deps.activities.putNew(tx, record);
    else this.deps.activities.put(tx, record);
  }

  /**
   * Bounded (EventRecorder.bounded) when its keys fit: the record's and its time-index row's, the id `act_` and the
   * event id's hex (activityFromEvent). Nothing else in `record` throws: the config is read from memory and the record
   * is built from the event Plait made.
   */
  bounded(apiKey: string, organizationId: string): boolean {
    return eventRecordKeysFit(apiKey, organizationId);
  }

  /** An outbox row it did not record when raised (raised before it recorded events): recorded while planning. */
  plan(tx: WriteTx, event: OutboxEvent, _now: number): void {
    if (event.recordedBy?.includes(this.name) === true) return;
    this.write(tx, event, false);
  }
}

/** Whether `config` logs events of `type`: a comment event, enabled, with the comment trigger on for it. */
function logs(config: ActivityConfig | undefined, type: EventType): boolean {
  return isCommentEvent(type) && config !== undefined && config.isEnabled && triggerOn(config.triggers?.comment, type);
}

export function activityFromEvent(event: StampedEvent, immutable: boolean): ActivityRecord {
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
