// Owns turning a raised change into an outbox event draft: upstream CommentPayload with the thread's final view.
import type { CommentPayload, EventDraft } from '../../events/types.js';
import { commentView, type AnnotationView, type DocumentRef } from './model.js';
import type { RaisedEvent } from './mutations.js';

export function eventDraft(ref: DocumentRef, annotation: AnnotationView, raised: RaisedEvent): EventDraft {
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
