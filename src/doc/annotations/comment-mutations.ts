// Owns the pure rules of changing comments inside a thread: edit and delete by id, with their events; no I/O.
import type { RaisedEvent } from './mutations.js';
import type { AnnotationRecord, CommentRecord, JsonObject, TaggedUserContact, UserRef } from './model.js';

/** `updatedData` of Update Comments (upstream notes 2.17); `from` is the user making the edit. */
export interface CommentUpdate {
  readonly from: UserRef;
  readonly commentText?: string;
  readonly commentHtml?: string;
  readonly context?: JsonObject;
  readonly taggedUserContacts?: readonly TaggedUserContact[];
  readonly attachments?: readonly JsonObject[];
  readonly isCommentResolverUsed?: boolean;
  readonly isCommentTextAvailable?: boolean;
}

export interface CommentChange {
  readonly record: AnnotationRecord;
  /** commentId -> whether it was found (and so changed). */
  readonly found: ReadonlyMap<number, boolean>;
  readonly events: RaisedEvent[];
}

export function updateComments(record: AnnotationRecord, commentIds: readonly number[], update: CommentUpdate, now: number): CommentChange {
  const wanted = new Set(commentIds);
  const found = new Map<number, boolean>(commentIds.map((id) => [id, false]));
  const events: RaisedEvent[] = [];
  const { from: actionUser, ...fields } = update;
  const comments = record.comments.map((comment) => {
    if (!wanted.has(comment.commentId)) return comment;
    found.set(comment.commentId, true);
    const updated: CommentRecord = { ...comment, ...fields, status: 'updated', lastUpdated: now };
    events.push({ type: 'comment.update', targetComment: updated, actionUser });
    return updated;
  });
  if (events.length === 0) return { record, found, events };
  return { record: { ...record, comments, lastUpdated: now }, found, events };
}

/** Deletes the listed comments, or every comment when `commentIds` is undefined; the thread itself stays. */
export function deleteComments(record: AnnotationRecord, commentIds: readonly number[] | undefined, now: number): CommentChange {
  const wanted = commentIds === undefined ? undefined : new Set(commentIds);
  const found = new Map<number, boolean>((commentIds ?? []).map((id) => [id, false]));
  const events: RaisedEvent[] = [];
  const kept: CommentRecord[] = [];
  for (const comment of record.comments) {
    if (wanted === undefined || wanted.has(comment.commentId)) {
      found.set(comment.commentId, true);
      events.push({ type: 'comment.delete', targetComment: comment });
    } else {
      kept.push(comment);
    }
  }
  if (events.length === 0) return { record, found, events };
  return { record: { ...record, comments: kept, lastUpdated: now }, found, events };
}
