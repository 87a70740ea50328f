// Owns the shapes of comment annotations: request inputs (spec 2.4-2.7), stored records, and read views (spec 2.5, 4.10).
import type { DocumentKey } from '../../document-key.js';

/** A user reference (spec 2.1). Extra fields the customer sends (photoUrl, color...) are kept as given. */
export interface UserRef {
  readonly userId: string;
  readonly name?: string;
  readonly email?: string;
  readonly [extra: string]: unknown;
}

export type StatusType = 'default' | 'ongoing' | 'terminal';

export interface Status {
  readonly id: string;
  readonly name: string;
  readonly type: StatusType;
  readonly color: string;
  readonly lightColor: string;
  readonly svg?: string;
  readonly iconUrl?: string;
}

export interface Priority {
  readonly id: string;
  readonly name: string;
  readonly color: string;
  readonly lightColor: string;
}

export interface Location {
  readonly id: string;
  readonly locationName?: string;
  readonly [extra: string]: unknown;
}

/** Anchor of a thread: text run (targetText + occurrence), whole element (selectAllContent) or element; none = page. */
export interface TargetElement {
  readonly elementId?: string;
  readonly targetText?: string;
  readonly occurrence?: number;
  readonly selectAllContent?: boolean;
}

export interface TaggedUserContact {
  readonly text: string;
  readonly userId: string;
  readonly contact: { readonly email: string; readonly name: string; readonly userId: string };
}

export type SuggestionStatus = 'pending' | 'accepted' | 'rejected';

export interface Suggestion {
  readonly status: SuggestionStatus;
  readonly [field: string]: unknown;
}

export type JsonObject = Readonly<Record<string, unknown>>;

/** Comment fields a caller may set (spec 2.5); `from` is required on add. */
export interface CommentInput {
  readonly commentId?: number;
  readonly commentText?: string;
  readonly commentHtml?: string;
  readonly from: UserRef;
  readonly createdAt?: number;
  readonly lastUpdated?: number;
  readonly taggedUserContacts?: readonly TaggedUserContact[];
  readonly context?: JsonObject;
  readonly attachments?: readonly JsonObject[];
  readonly isCommentResolverUsed?: boolean;
  readonly isCommentTextAvailable?: boolean;
}

export interface AnnotationInput {
  readonly annotationId?: string;
  readonly location?: Location;
  readonly targetElement?: TargetElement;
  readonly commentData: readonly CommentInput[];
  readonly status?: Status;
  readonly priority?: Priority;
  readonly assignedTo?: UserRef;
  readonly context?: JsonObject;
  readonly createdAt?: number;
  readonly lastUpdated?: number;
  readonly type?: 'comment' | 'suggestion';
  readonly suggestion?: Partial<Suggestion>;
}

export interface CommentRecord {
  readonly commentId: number;
  readonly commentText?: string;
  readonly commentHtml?: string;
  readonly from: UserRef;
  readonly createdAt: number;
  readonly lastUpdated: number;
  readonly status: 'added' | 'updated';
  readonly taggedUserContacts: readonly TaggedUserContact[];
  readonly context?: JsonObject;
  readonly attachments?: readonly JsonObject[];
  readonly isCommentResolverUsed?: boolean;
  readonly isCommentTextAvailable?: boolean;
}

/** One row of DB.annotations: a thread with its comments (threads are small; one record keeps a change one put). */
export interface AnnotationRecord {
  readonly annotationId: string;
  /** 1-based creation order within the document. */
  readonly annotationNumber: number;
  readonly type: 'comment' | 'suggestion';
  readonly createdAt: number;
  readonly lastUpdated: number;
  readonly from: UserRef;
  readonly status: Status;
  readonly location?: Location;
  readonly targetElement?: TargetElement;
  readonly priority?: Priority;
  readonly assignedTo?: UserRef;
  readonly context?: JsonObject;
  readonly suggestion?: Suggestion;
  readonly resolvedByUserId?: string;
  readonly statusUpdatedByUserId?: string;
  readonly comments: readonly CommentRecord[];
  /** Next generated commentId; never reused, even after deletes. */
  readonly nextCommentId: number;
}

export interface CommentView {
  readonly commentId: number;
  readonly type: 'text';
  readonly status: 'added' | 'updated';
  readonly commentText: string;
  readonly commentHtml: string;
  readonly from: UserRef;
  readonly createdAt: number;
  /** ISO 8601 (spec 2.5 read shape), unlike every other timestamp. */
  readonly lastUpdated: string;
  readonly taggedUserContacts: readonly TaggedUserContact[];
  readonly attachments: readonly JsonObject[];
  readonly isCommentTextAvailable: boolean;
  readonly isCommentResolverUsed?: boolean;
  readonly context?: JsonObject;
}

export interface AnnotationView extends Omit<AnnotationRecord, 'comments' | 'nextCommentId'> {
  readonly sourceType: 'rest-api';
  readonly metadata: { readonly apiKey: string; readonly organizationId: string; readonly documentId: string };
  readonly comments: readonly CommentView[];
}


/** Used when a thread is added without a status (upstream sample: id OPEN, type default). */
export const DEFAULT_STATUS: Status = { id: 'OPEN', name: 'Open', type: 'default', color: '#625DF5', lightColor: '#E7E8FA' };

/**
 * The views copy a record's fields with a for-in loop, not with object rest (`{ a, ...rest }`): rest with unknown keys
 * is V8's slow path, and these run for every thread written and every event (annotationView went from ~6 µs to ~1.5 µs,
 * bench/README.md, "REST comment writes"). Key order is the same as before: the record's own order, then what the view adds.
 */
export function commentView(comment: CommentRecord): CommentView {
  const text = comment.commentText ?? '';
  const html = comment.commentHtml ?? '';
  const view: FieldBag = { commentId: comment.commentId };
  const fields = comment as unknown as Readonly<Record<string, unknown>>;
  for (const key in fields) {
    if (key === 'commentId' || key === 'lastUpdated' || key === 'commentText' || key === 'commentHtml' || key === 'attachments' || key === 'isCommentTextAvailable') continue;
    copyField(view, key, fields[key]);
  }
  view['type'] = 'text';
  view['commentText'] = text;
  view['commentHtml'] = html;
  view['lastUpdated'] = new Date(comment.lastUpdated).toISOString();
  view['attachments'] = comment.attachments ?? [];
  view['isCommentTextAvailable'] = comment.isCommentTextAvailable ?? (text !== '' || html !== '');
  return view as unknown as CommentView;
}

export function annotationView(ref: DocumentKey, record: AnnotationRecord): AnnotationView {
  const view: FieldBag = {};
  const fields = record as unknown as Readonly<Record<string, unknown>>;
  for (const key in fields) {
    if (key === 'comments' || key === 'nextCommentId') continue;
    copyField(view, key, fields[key]);
  }
  view['sourceType'] = 'rest-api';
  view['metadata'] = { apiKey: ref.apiKey, organizationId: ref.organizationId, documentId: ref.documentId };
  view['comments'] = record.comments.map(commentView);
  return view as unknown as AnnotationView;
}

/** An object under construction (plain, like the records it is made from). */
export type FieldBag = Record<string, unknown>;

/**
 * Sets `target[key]` as an own data property, as a spread would. A caller's extra field may be named `__proto__`
 * (JSON.parse makes it an own property); a plain assignment would set the prototype instead of copying the field.
 */
export function copyField(target: FieldBag, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
