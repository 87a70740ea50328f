// Owns the trigger vocabularies of the delivery configs: default trigger sets and the two spellings of a trigger key.
import { EVENT_TYPES, V1_ACTION, type EventType } from '../events/types.js';

export type Triggers = Record<string, boolean>;

/** The comment triggers "standard" in spec 3 for email: the common keys of spec 4.5. */
export const EMAIL_COMMENT_TRIGGERS: readonly EventType[] = [
  'comment_annotation.add',
  'comment.add',
  'comment_annotation.status_change',
  'comment_annotation.assign',
  'comment_annotation.priority_change',
];

/** Standard comment triggers for notifications and basic webhooks: every comment event except the opt-in suggestion ones. */
export const STANDARD_COMMENT_TRIGGERS: readonly EventType[] = EVENT_TYPES.filter(
  (type) => type !== 'comment_annotation.suggestion_accept' && type !== 'comment_annotation.suggestion_reject',
);

/** Activity logs: every comment event, suggestion accept/reject included (spec 4.9). */
export const ACTIVITY_COMMENT_TRIGGERS: readonly EventType[] = EVENT_TYPES;

/** Huddle triggers (upstream 2.6); Plait raises no huddle events yet, but seeds and keeps them as configured. */
export const HUDDLE_TRIGGERS: readonly string[] = ['huddle.create', 'huddle.join'];
export const HUDDLE_TRIGGER_NAMES: readonly string[] = ['created', 'join'];

export function allOn(keys: readonly string[]): Triggers {
  return Object.fromEntries(keys.map((key) => [key, true]));
}

/**
 * Whether `triggers` turns `type` on. Both vocabularies count (upstream 2.6): the event type (`comment.add`)
 * and its action name (`added`). An event-type key wins over an action-name key when both are present.
 */
export function triggerOn(triggers: Triggers | undefined, type: EventType): boolean {
  if (triggers === undefined) return false;
  const byType = triggers[type];
  if (typeof byType === 'boolean') return byType;
  const byAction = triggers[V1_ACTION[type]];
  return byAction === true;
}
