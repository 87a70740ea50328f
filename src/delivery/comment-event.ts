// Owns reading a comment event's payload: every event Plait raises today comes from comment annotations.
import type { CommentPayload } from '../doc/annotations/events.js';
import type { StampedEvent } from '../events/types.js';

/** The payload of a comment event (`source: 'comment'`, the only source so far); its shape is owned by src/doc. */
export function commentData(event: StampedEvent): CommentPayload {
  return event.data as CommentPayload;
}
