// Owns the pure rules of changing a thread: building one from input, applying an update, swapping users; no I/O.
import type { EventType } from '../../events/types.js';
import {
  copyField,
  DEFAULT_STATUS,
  type FieldBag,
  type AnnotationInput,
  type AnnotationRecord,
  type CommentInput,
  type CommentRecord,
  type JsonObject,
  type Location,
  type Priority,
  type Status,
  type Suggestion,
  type TargetElement,
  type UserRef,
} from './model.js';

/** A domain event a change raises, before the state turns it into an outbox row with the thread's final view. */
export interface RaisedEvent {
  readonly type: EventType;
  /** The comment a comment.* event is about, as it is after the change (before it, for a delete). */
  readonly targetComment?: CommentRecord;
  readonly actionUser?: UserRef;
  readonly oldStatus?: Status;
  readonly newStatus?: Status;
  readonly newPriority?: Priority | null;
  readonly assigned?: boolean;
  readonly changedFields?: readonly string[];
}

export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

const fail = (message: string): { ok: false; message: string } => ({ ok: false, message });

/**
 * Appends comments, giving ids to those without one; a custom id already used in the thread fails the whole set.
 * Every id of a thread is below its `nextCommentId` (each id given or assigned moves it past itself, and deletes never
 * lower it), so ids assigned from it are free: the thread's ids are gathered only when an input brings its own id, and
 * a comment added to a long thread does not walk it (bench/README.md, "Twenty-first session: the comment write path").
 */
export function appendComments(
  existing: readonly CommentRecord[],
  nextCommentId: number,
  inputs: readonly CommentInput[],
  now: number,
): Outcome<{ comments: CommentRecord[]; added: CommentRecord[]; nextCommentId: number }> {
  let used: Set<number> | undefined;
  let next = nextCommentId;
  const added: CommentRecord[] = [];
  for (const input of inputs) {
    let commentId = input.commentId;
    if (commentId === undefined) {
      commentId = next;
    } else {
      used ??= new Set([...existing, ...added].map((comment) => comment.commentId));
      if (used.has(commentId)) return fail(`commentId ${commentId} already exists in this annotation`);
    }
    used?.add(commentId);
    next = Math.max(next, commentId + 1);
    added.push(commentRecord(input, commentId, now));
  }
  return { ok: true, value: { comments: existing.length === 0 ? added.slice() : [...existing, ...added], added, nextCommentId: next } };
}

/**
 * The caller's fields (extra ones kept, as given), then the ones the server sets. A for-in copy, not object rest: rest
 * with unknown keys is V8's slow path, and this runs for every comment written (model.ts, the views, says more).
 */
function commentRecord(input: CommentInput, commentId: number, now: number): CommentRecord {
  const record: FieldBag = {};
  const fields = input as unknown as Readonly<Record<string, unknown>>;
  for (const key in fields) {
    if (key === 'commentId' || key === 'createdAt' || key === 'lastUpdated' || key === 'taggedUserContacts') continue;
    copyField(record, key, fields[key]);
  }
  record['commentId'] = commentId;
  record['createdAt'] = input.createdAt ?? now;
  record['lastUpdated'] = input.lastUpdated ?? input.createdAt ?? now;
  record['status'] = 'added';
  record['taggedUserContacts'] = input.taggedUserContacts ?? [];
  return record as unknown as CommentRecord;
}

/** A new thread from Add Comment Annotations input (spec 2.4). Optional fields are set only when given (no spreads). */
export function buildAnnotation(
  input: AnnotationInput,
  annotationId: string,
  annotationNumber: number,
  now: number,
): Outcome<AnnotationRecord> {
  if (annotationId.includes(':')) return fail('annotationId must not contain ":"');
  const first = input.commentData[0];
  if (first === undefined) return fail('commentData must have at least one comment');
  const built = appendComments([], 1, input.commentData, now);
  if (!built.ok) return built;
  const type = input.type ?? (input.suggestion === undefined ? 'comment' : 'suggestion');
  if (type === 'comment' && input.suggestion !== undefined) return fail('suggestion is only accepted on an annotation of type "suggestion"');
  const createdAt = input.createdAt ?? now;
  const record: FieldBag = {
    annotationId,
    annotationNumber,
    type,
    createdAt,
    lastUpdated: input.lastUpdated ?? createdAt,
    from: first.from,
    status: input.status ?? DEFAULT_STATUS,
  };
  if (input.location !== undefined) record['location'] = input.location;
  if (input.targetElement !== undefined) record['targetElement'] = input.targetElement;
  if (input.priority !== undefined) record['priority'] = input.priority;
  if (input.assignedTo !== undefined) record['assignedTo'] = input.assignedTo;
  if (input.context !== undefined) record['context'] = input.context;
  if (type === 'suggestion') record['suggestion'] = { ...input.suggestion, status: input.suggestion?.status ?? 'pending' };
  record['comments'] = built.value.comments;
  record['nextCommentId'] = built.value.nextCommentId;
  return { ok: true, value: record as unknown as AnnotationRecord };
}

/** `updatedData` of Update Comment Annotations (upstream notes 2.16). `null` clears a field. */
export interface AnnotationUpdate {
  readonly location?: Location;
  readonly targetElement?: TargetElement;
  readonly from?: UserRef;
  readonly status?: Status;
  readonly statusUpdatedByUserId?: string | null;
  readonly resolvedByUserId?: string | null;
  readonly assignedTo?: UserRef | null;
  readonly context?: JsonObject;
  readonly priority?: Priority | null;
  readonly suggestion?: Partial<Suggestion>;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function setOrClear<K extends keyof AnnotationRecord>(draft: Mutable<AnnotationRecord>, key: K, value: AnnotationRecord[K] | null): void {
  if (value === null || value === undefined) delete draft[key];
  else draft[key] = value;
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * Applies `update` to a thread. Returns the new record and one event per aspect that actually changed
 * (status, assignee, priority, suggestion decision, other fields); an update that changes nothing raises none.
 */
export function applyUpdate(record: AnnotationRecord, update: AnnotationUpdate, now: number): Outcome<{ record: AnnotationRecord; events: RaisedEvent[] }> {
  if (update.suggestion !== undefined && record.type !== 'suggestion') return fail('suggestion can only be updated on an annotation of type "suggestion"');
  const draft: Mutable<AnnotationRecord> = { ...record };
  const events: RaisedEvent[] = [];
  const actor = update.statusUpdatedByUserId ?? undefined;
  const actionUser = actor === undefined ? {} : { actionUser: { userId: actor } };
  /** Changes no specific event covers; they raise one comment_annotation.update. */
  const changedFields: string[] = [];

  if (update.status !== undefined && !sameJson(update.status, record.status)) {
    draft.status = update.status;
    if (update.status.type !== 'terminal') delete draft.resolvedByUserId;
    else if (update.resolvedByUserId === undefined && actor !== undefined) draft.resolvedByUserId = actor;
    if (update.status.id !== record.status.id) {
      events.push({ type: 'comment_annotation.status_change', oldStatus: record.status, newStatus: update.status, ...actionUser });
    } else {
      changedFields.push('status');
    }
  }
  if (update.statusUpdatedByUserId !== undefined) setOrClear(draft, 'statusUpdatedByUserId', update.statusUpdatedByUserId);
  if (update.resolvedByUserId !== undefined && (draft.status.type === 'terminal' || update.resolvedByUserId === null)) {
    setOrClear(draft, 'resolvedByUserId', update.resolvedByUserId);
  }
  if (update.assignedTo !== undefined && !sameJson(update.assignedTo ?? undefined, record.assignedTo)) {
    setOrClear(draft, 'assignedTo', update.assignedTo);
    events.push({ type: 'comment_annotation.assign', assigned: update.assignedTo !== null, ...actionUser });
  }
  if (update.priority !== undefined && !sameJson(update.priority ?? undefined, record.priority)) {
    setOrClear(draft, 'priority', update.priority);
    events.push({ type: 'comment_annotation.priority_change', newPriority: update.priority, ...actionUser });
  }
  if (update.suggestion !== undefined) {
    const suggestion: Suggestion = { ...update.suggestion, status: update.suggestion.status ?? record.suggestion?.status ?? 'pending' };
    const before = record.suggestion?.status;
    if (!sameJson(suggestion, record.suggestion)) {
      draft.suggestion = suggestion;
      if (suggestion.status !== before && suggestion.status === 'accepted') events.push({ type: 'comment_annotation.suggestion_accept', ...actionUser });
      else if (suggestion.status !== before && suggestion.status === 'rejected') events.push({ type: 'comment_annotation.suggestion_reject', ...actionUser });
      else events.push({ type: 'comment_annotation.update', changedFields: ['suggestion'], ...actionUser });
    }
  }
  for (const key of ['statusUpdatedByUserId', 'resolvedByUserId'] as const) {
    if (draft[key] !== record[key] && !changedFields.includes('status') && !events.some((e) => e.type === 'comment_annotation.status_change')) {
      changedFields.push(key);
    }
  }
  for (const key of ['location', 'targetElement', 'from', 'context'] as const) {
    const value = update[key];
    if (value !== undefined && !sameJson(value, record[key])) {
      setOrClear(draft, key, value);
      changedFields.push(key);
    }
  }
  if (changedFields.length > 0) events.push({ type: 'comment_annotation.update', changedFields, ...actionUser });
  const changed = !sameJson(draft, record);
  if (changed) draft.lastUpdated = now;
  return { ok: true, value: { record: changed ? draft : record, events } };
}

export interface UserSwap {
  readonly oldUser: UserRef;
  readonly newUser: UserRef;
}

/** Replaces every reference to each old user (author, assignee, comment authors, tags) with the new one. */
export function swapUsers(record: AnnotationRecord, swaps: readonly UserSwap[], now: number): { record: AnnotationRecord; events: RaisedEvent[] } {
  const byId = new Map(swaps.map((swap) => [swap.oldUser.userId, swap.newUser]));
  const swap = (user: UserRef): UserRef => byId.get(user.userId) ?? user;
  const changedFields = new Set<string>();
  const from = swap(record.from);
  if (from !== record.from) changedFields.add('from');
  const assignedTo = record.assignedTo === undefined ? undefined : swap(record.assignedTo);
  if (assignedTo !== record.assignedTo) changedFields.add('assignedTo');
  const comments = record.comments.map((comment) => {
    const author = swap(comment.from);
    const tags = comment.taggedUserContacts.map((tag) => {
      const to = byId.get(tag.userId);
      if (to === undefined) return tag;
      return { ...tag, userId: to.userId, contact: { ...tag.contact, userId: to.userId, name: to.name ?? tag.contact.name, email: to.email ?? tag.contact.email } };
    });
    if (author === comment.from && tags.every((tag, i) => tag === comment.taggedUserContacts[i])) return comment;
    changedFields.add('comments');
    return { ...comment, from: author, taggedUserContacts: tags };
  });
  if (changedFields.size === 0) return { record, events: [] };
  return {
    record: { ...record, from, ...(assignedTo === undefined ? {} : { assignedTo }), comments, lastUpdated: now },
    events: [{ type: 'comment_annotation.update', changedFields: [...changedFields] }],
  };
}
