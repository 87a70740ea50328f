// Owns turning a raised change into an outbox event draft: upstream CommentPayload with the thread's final view.
import type { EventDraft, EventPayload } from '../../events/types.js';
import { commentView, type AnnotationView, type CommentView, type Priority, type Status, type UserRef } from './model.js';
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

export function eventDraft(ref: DocumentKey, annotation: AnnotationView, raised: RaisedEvent): EventDraft {
  const data: CommentPayload = {
    commentAnnotation: annotation,
    metadata: {
      apiKey: ref.apiKey,
      organizationId: ref.organizationId,
      documentId: ref.documentId,
      document: { documentId: ref.documentId },
      organization: { organizationId: ref.organizationId },
    },
    ...(raised.targetComment === undefined ? {} : { targetComment: commentView(raised.targetComment) }),
    ...(raised.actionUser === undefined ? {} : { actionUser: raised.actionUser }),
    ...(raised.oldStatus === undefined ? {} : { oldStatus: raised.oldStatus }),
    ...(raised.newStatus === undefined ? {} : { newStatus: raised.newStatus }),
    ...(raised.newPriority === undefined ? {} : { newPriority: raised.newPriority }),
    ...(raised.assigned === undefined ? {} : { assigned: raised.assigned }),
    ...(raised.changedFields === undefined ? {} : { changedFields: raised.changedFields }),
  };
  return { type: raised.type, apiKey: ref.apiKey, organizationId: ref.organizationId, documentId: ref.documentId, data };
}

/** Narrows an outbox event's `data` to a comment payload (a delivery channel reads it after checking the type). */
export function isCommentPayload(data: EventPayload): data is CommentPayload {
  const annotation = (data as Partial<CommentPayload>).commentAnnotation;
  return typeof annotation === 'object' && annotation !== null;
}
