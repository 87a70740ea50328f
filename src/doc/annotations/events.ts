// Owns turning a raised change into an outbox event draft: upstream CommentPayload with the thread's final view.
import { eventMetadata, type EventDraft, type EventPayload } from '../../events/types.js';
import { commentView, type AnnotationRecord, type AnnotationView, type CommentRecord, type CommentView, type Priority, type Status, type UserRef } from './model.js';
import type { DocumentKey } from '../../document-key.js';
import type { RaisedEvent } from './mutations.js';

/** `data` of a comment event: upstream `CommentPayload` (WebhookV2Payload.data). */
export interface CommentPayload extends EventPayload {
  /** The thread after the change (for comment_annotation.delete: its last state). */
  readonly commentAnnotation: AnnotationView;
  /** The comment the event is about; absent for thread-level events. */
  readonly targetComment?: CommentView;
  readonly actionUser?: UserRef;
  readonly oldStatus?: Status;
  readonly newStatus?: Status;
  readonly newPriority?: Priority | null;
  /** On assign: true when someone is assigned, false when the assignee was cleared. */
  readonly assigned?: boolean;
  /** On update: names of the thread fields that changed. */
  readonly changedFields?: readonly string[];
}

/**
 * `annotation` is the view of `thread` (its comments index-aligned with the thread's, as annotationView builds them).
 * The target comment's view is taken from it when the target is one of those comment records: commentView is a pure
 * function of the record, so the same object gives the same JSON, and building it twice was ~0.7% of a REST
 * comment's CPU (bench/README.md, "REST comment path, sixth session"). A comment no longer in the thread (a delete) is
 * viewed on its own.
 */
export function eventDraft(ref: DocumentKey, annotation: AnnotationView, raised: RaisedEvent, thread?: AnnotationRecord): EventDraft {
  const data: CommentPayload = {
    commentAnnotation: annotation,
    metadata: eventMetadata(ref),
    ...(raised.targetComment === undefined ? {} : { targetComment: targetView(annotation, thread, raised.targetComment) }),
    ...(raised.actionUser === undefined ? {} : { actionUser: raised.actionUser }),
    ...(raised.oldStatus === undefined ? {} : { oldStatus: raised.oldStatus }),
    ...(raised.newStatus === undefined ? {} : { newStatus: raised.newStatus }),
    ...(raised.newPriority === undefined ? {} : { newPriority: raised.newPriority }),
    ...(raised.assigned === undefined ? {} : { assigned: raised.assigned }),
    ...(raised.changedFields === undefined ? {} : { changedFields: raised.changedFields }),
  };
  return { type: raised.type, apiKey: ref.apiKey, organizationId: ref.organizationId, documentId: ref.documentId, data };
}

function targetView(annotation: AnnotationView, thread: AnnotationRecord | undefined, target: CommentRecord): CommentView {
  const index = thread === undefined ? -1 : thread.comments.indexOf(target);
  return (index >= 0 ? annotation.comments[index] : undefined) ?? commentView(target);
}

/** Narrows an outbox event's `data` to a comment payload (a delivery channel reads it after checking the type). */
export function isCommentPayload(data: EventPayload): data is CommentPayload {
  const annotation = (data as Partial<CommentPayload>).commentAnnotation;
  return typeof annotation === 'object' && annotation !== null;
}
