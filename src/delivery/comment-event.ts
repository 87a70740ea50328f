// Owns reading a comment event's payload: every event Plait raises today comes from comment annotations.
import type { CommentPayload } from '../doc/annotations/events.js';
import type { RaisedEvent } from '../events/types.js';

/** The payload of a comment event (`source: 'comment'`, the only source so far); its shape is owned by src/doc. */
export function commentData(event: RaisedEvent): CommentPayload {
  return event.data as CommentPayload;
}
