// Owns the domain-event vocabulary: event types, their upstream action names, and the stored outbox event shape.
import type { DocumentKey } from '../document-key.js';
import type { WriteTx } from '../store/env.js';

/** Event types raised by comment annotations (spec 6, upstream notes 3.2), plus two Plait extensions marked below. */
export const EVENT_TYPES = [
  'comment_annotation.add',
  'comment_annotation.status_change',
  'comment_annotation.assign',
  'comment_annotation.priority_change',
  'comment_annotation.suggestion_accept',
  'comment_annotation.suggestion_reject',
  /** Plait extension: context, location, targeting or user-swap edits, which upstream raises no event for. */
  'comment_annotation.update',
  /** Plait extension: a thread was deleted. */
  'comment_annotation.delete',
  'comment.add',
  'comment.update',
  'comment.delete',
] as const;

/** Event types raised by a document's Yjs stores (upstream notes 3.2): one, debounced per store (src/doc/crdt-events.ts). */
export const CRDT_EVENT_TYPES = ['crdt.update_data'] as const;
/** Raised by recordings/add, in its transaction (src/doc/recordings.ts; upstream notes 3.2's `recorder.done`). */
export const RECORDER_EVENT_TYPES = ['recorder.done'] as const;

export type CommentEventType = (typeof EVENT_TYPES)[number];
export type EventType = CommentEventType | (typeof CRDT_EVENT_TYPES)[number] | (typeof RECORDER_EVENT_TYPES)[number];

/** Where an event comes from (WebhookV1Payload `notificationSource`, WebhookV2Payload `source`): what its payload holds. */
export type EventSource = 'comment' | 'crdt' | 'recorder';

export function sourceOf(type: EventType): EventSource {
  return type === 'crdt.update_data' ? 'crdt' : type === 'recorder.done' ? 'recorder' : 'comment';
}

/** Comment events only: what the comment channels (email, in-app notifications, activity logs) act on. */
export function isCommentEvent(type: EventType): type is CommentEventType {
  return sourceOf(type) === 'comment';
}

/** The basic-webhook (V1) `actionType` of each event, so a V1 channel needs no table of its own. */
export const V1_ACTION: Readonly<Record<EventType, string>> = {
  'comment_annotation.add': 'newlyAdded',
  'comment_annotation.status_change': 'statusChanged',
  'comment_annotation.assign': 'assigned',
  'comment_annotation.priority_change': 'priorityChanged',
  'comment_annotation.suggestion_accept': 'suggestionAccepted',
  'comment_annotation.suggestion_reject': 'suggestionRejected',
  'comment_annotation.update': 'updated',
  'comment_annotation.delete': 'deleted',
  'comment.add': 'added',
  'comment.update': 'updated',
  'comment.delete': 'deleted',
  'crdt.update_data': 'updateData',
  'recorder.done': 'done',
};

export interface EventMetadata {
  readonly apiKey: string;
  readonly organizationId: string;
  readonly documentId: string;
  /** V2 nests these (upstream notes 3.2); both spellings are kept so either channel can read them. */
  readonly document: { readonly documentId: string };
  readonly organization: { readonly organizationId: string };
}

/** The metadata of an event about `key`'s document, in both spellings (every source builds it here). */
export function eventMetadata(key: DocumentKey): EventMetadata {
  return {
    apiKey: key.apiKey,
    organizationId: key.organizationId,
    documentId: key.documentId,
    document: { documentId: key.documentId },
    organization: { organizationId: key.organizationId },
  };
}

/**
 * What every event's `data` carries. The source that raises an event owns the rest of its payload's shape (comment
 * events: `CommentPayload` in src/doc/annotations/events.ts), so this module imports nothing from the core that
 * writes to the outbox; a reader narrows on `type`.
 */
export interface EventPayload {
  readonly metadata: EventMetadata;
}

/**
 * Who acts on events: whether anything would act on an event of `type` raised under `apiKey` (a delivery channel the
 * API key has configured with the trigger on). An event nothing wants is not written (`Outbox.wants`).
 */
export interface EventAudience {
  wants(apiKey: string, type: EventType): boolean;
}

/** What a change hands to the outbox; the outbox adds id, seq and createdAt. */
export interface EventDraft {
  readonly type: EventType;
  readonly apiKey: string;
  readonly organizationId: string;
  readonly documentId: string;
  readonly data: EventPayload;
}

/** A draft stamped with its id and creation time: the event as raised, before (or without) its outbox row. */
export interface StampedEvent extends EventDraft {
  /** Stable id for deliveries (the webhook-id of every attempt), and what records made from the event derive theirs from. */
  readonly id: string;
  readonly createdAt: number;
}

/**
 * A channel that keeps a local record of events (the activity log, an in-app notification sent at once): it writes the
 * record in the transaction that raises the event, so an event only recorders want needs no outbox row, no dispatcher
 * round and no second commit (`Outbox.raise`).
 */
export interface EventRecorder {
  /** The channel's name, as the planner of the same channel knows it (`OutboxEvent.recordedBy`). */
  readonly name: string;
  /** Whether it records events of `type` under `apiKey` in the raising transaction, as configured now. */
  wants(apiKey: string, type: EventType): boolean;
  /**
   * Writes its record of `event` with the raising change (synchronous; it may decide per event to keep none). The
   * event is new (`Outbox.raise` made its id), so no record made from it is stored yet.
   */
  record(tx: WriteTx, event: StampedEvent): void;
  /**
   * Whether `record` for an event of this organization is bounded: every key it writes is made of the API key, the
   * organization and ids the recorder makes, and passes `keyFits` (src/limits.ts), and nothing else in it can throw.
   * Then the raising change may go without a child transaction of its own (GroupedChange.bounded,
   * src/store/group-commit.ts). Absent: never.
   */
  bounded?(apiKey: string, organizationId: string): boolean;
}

/** One row of DB.outbox. */
export interface OutboxEvent extends StampedEvent {
  /** Key in DB.outbox (with `node` in a cluster); increasing in commit order on one process. */
  readonly seq: number;
  /** Cluster mode: the node that appended the event, the second part of its key (src/events/outbox.ts). */
  readonly node?: string;
  /**
   * The recorders that recorded this event when the change raised it (`Outbox.raise`, by `EventRecorder.name`): the
   * planners of those channels leave it alone. Absent when none did, and on rows raised before recorders existed,
   * which the planners record as before.
   */
  readonly recordedBy?: readonly string[];
  /** V2 `actionType` is the part after the dot; this is the V1 one (V1_ACTION). */
  readonly actionType: string;
  readonly source: EventSource;
  /** Set by claim(): until this time (ms) no other dispatcher takes the event. */
  readonly claimedUntil?: number;
  /** How many times the event has been claimed. */
  readonly attempts: number;
}
