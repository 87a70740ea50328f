// Owns one document's comment annotations in memory: load from LMDB, and every change committed with its events.
import type { Database, Key } from 'lmdb';
import { dict } from '../../dict.js';
import { timeOrderedBase62 } from '../../ids.js';
import { invalidArgument, notFound } from '../../errors.js';
import type { Outbox } from '../../events/outbox.js';
import type { Store } from '../../store/env.js';
import { DB, distinctAfter, KEY_END } from '../../store/keys.js';
import { DocumentWrites } from '../document-writes.js';
import { deleteComments, updateComments, type CommentChange, type CommentUpdate } from './comment-mutations.js';
import { annotationView, commentView, type AnnotationInput, type AnnotationRecord, type AnnotationView, type CommentInput, type CommentRecord, type CommentView } from './model.js';
import type { DocumentKey } from '../../document-key.js';
import { appendComments, applyUpdate, buildAnnotation, swapUsers, type AnnotationUpdate, type RaisedEvent, type UserSwap } from './mutations.js';
import { matches } from './query.js';
import { ThreadChanges, type Change, type LiveAnnotationChange } from './thread-changes.js';
import { checkThreadGrowth, threadBytes } from './thread-size.js';
import { MeasuredMap } from '../measured-map.js';
import { DEFAULT_MAX_COMMENT_THREAD_BYTES } from '../../limits.js';
import { threadIndexes, type ThreadIndexes } from './time-index.js';


export type { LiveAnnotationChange };

/** What a change returns: the operation's answer and what connected clients must be told. */
export interface Mutation<T> {
  readonly data: T;
  readonly live: LiveAnnotationChange[];
}

export interface ItemResult {
  readonly success: boolean;
  readonly id: string;
  readonly message: string;
}

export interface AddResult {
  readonly success: boolean;
  readonly annotationId: string;
  readonly commentIds: number[];
  readonly message: string;
}

/** Which threads Update and Delete touch: every given list must match (AND). */
export interface Selector {
  readonly annotationIds?: readonly string[];
  readonly locationIds?: readonly string[];
  readonly userIds?: readonly string[];
}


export interface AnnotationDeps {
  readonly store: Store;
  readonly outbox: Outbox;
  readonly now: () => number;
  /** The document's ordered writes, shared with its presence (a state of its own when not given). */
  readonly writes?: DocumentWrites;
  /** Told each change once it has committed, in commit order (the live message to the document's sockets). */
  readonly published?: (live: readonly LiveAnnotationChange[]) => void;
  /** MAX_COMMENT_THREAD_BYTES (0: none; default DEFAULT_MAX_COMMENT_THREAD_BYTES). */
  readonly maxCommentThreadBytes?: number;
}

/** What a document without threads reads (most loaded documents have none; an empty Map is ~180 bytes). Never written. */
const NO_RECORDS: ReadonlyMap<string, AnnotationRecord> = new Map();

export class AnnotationState {
  private readonly db: Database<AnnotationRecord, Key>;
  /** The thread indexes' databases, resolved once per document rather than per commit. */
  private readonly indexes: ThreadIndexes;
  private readonly writes: DocumentWrites;

  private constructor(
    readonly ref: DocumentKey,
    private readonly deps: AnnotationDeps,
    /** The threads by id, their bytes as JSON summed; made by the first change when the document had none. */
    private stored: MeasuredMap<string, AnnotationRecord> | undefined,
    private nextNumber: number,
    /** Threads whose row is still under the annotation id (see `load`); undefined: none. */
    private readonly legacy: Set<string> | undefined,
  ) {
    this.db = deps.store.records<AnnotationRecord>(DB.annotations);
    this.indexes = threadIndexes(deps.store);
    this.writes = deps.writes ?? new DocumentWrites(deps.store);
  }

  private get records(): ReadonlyMap<string, AnnotationRecord> {
    return this.stored ?? NO_RECORDS;
  }

  /** The threads' bytes as JSON (`threadBytes`): what the loaded-documents budget counts of them. */
  get heldBytes(): number {
    return this.stored?.bytes ?? 0;
  }

  /**
   * Reads every thread of the document (one range scan). A thread's row is keyed by its annotation number, which
   * grows with each new thread, so new threads append to the end of the document's range: a random annotation id as
   * the key put each new thread on a random B-tree page, and a commit wrote one page per thread (bench/README.md,
   * "Fourteenth session"). Rows written before (schema 2) are keyed by the annotation id; they are read as they are
   * and move to their number with their thread's next change.
   */
  static load(deps: AnnotationDeps, ref: DocumentKey): AnnotationState {
    const db = deps.store.records<AnnotationRecord>(DB.annotations);
    const prefix = [ref.apiKey, ref.organizationId, ref.documentId];
    let records: MeasuredMap<string, AnnotationRecord> | undefined;
    let legacy: Set<string> | undefined;
    let nextNumber = 1;
    for (const { key, value } of db.getRange({ start: prefix, end: [...prefix, KEY_END] })) {
      (records ??= new MeasuredMap(threadBytes)).set(value.annotationId, value);
      if (typeof (key as Key[])[3] === 'string') (legacy ??= new Set()).add(value.annotationId);
      nextNumber = Math.max(nextNumber, value.annotationNumber + 1);
    }
    return new AnnotationState(ref, deps, records, nextNumber, legacy);
  }

  /** Ids of the organization's documents that have at least one thread, from the stored keys (skip-scan). */
  static documentIds(store: Store, apiKey: string, organizationId: string): string[] {
    return distinctAfter(store.records<AnnotationRecord>(DB.annotations), [apiKey, organizationId]);
  }

  get size(): number {
    return this.records.size;
  }

  all(): IterableIterator<AnnotationRecord> {
    return this.records.values();
  }

  find(annotationId: string): AnnotationRecord | undefined {
    return this.records.get(annotationId);
  }

  view(record: AnnotationRecord): AnnotationView {
    return annotationView(this.ref, record);
  }

  /**
   * Add Comment Annotations: per-item results; an item that fails leaves the others untouched.
   * Every change below alters memory before its first await (the document's next operation sees it) and resolves
   * once committed; a failed commit rejects and leaves memory as it was (src/doc/document-writes.ts).
   */
  async add(inputs: readonly AnnotationInput[]): Promise<Mutation<Record<string, AddResult>>> {
    const now = this.deps.now();
    const results: Record<string, AddResult> = dict();
    const changes: Change[] = [];
    const taken = new Set<string>();
    let number = this.nextNumber;
    inputs.forEach((input, index) => {
      const annotationId = input.annotationId ?? this.generateId(taken);
      const key = annotationId in results ? `__failed:${index}` : annotationId;
      const failure = (message: string): void => {
        results[key] = { success: false, annotationId, commentIds: [], message };
      };
      if (this.records.has(annotationId) || taken.has(annotationId)) return failure('annotation already exists');
      const built = buildAnnotation(input, annotationId, number, now);
      if (!built.ok) return failure(built.message);
      number++;
      taken.add(annotationId);
      changes.push({ before: undefined, after: built.value, events: [{ type: 'comment_annotation.add', actionUser: built.value.from, ...first(built.value) }] });
      results[key] = { success: true, annotationId, commentIds: built.value.comments.map((c) => c.commentId), message: 'Annotation added successfully.' };
    });
    const previousNumber = this.nextNumber;
    this.nextNumber = number;
    const live = await this.commit(changes, now, () => (this.nextNumber = previousNumber));
    return { data: results, live };
  }

  /** Update Comment Annotations: fields of `update` and user swaps applied to every selected thread. */
  async update(selector: Selector, update: AnnotationUpdate | undefined, swaps: readonly UserSwap[] | undefined): Promise<Mutation<Record<string, ItemResult>>> {
    const now = this.deps.now();
    const results: Record<string, ItemResult> = dict();
    const changes: Change[] = [];
    for (const [id, record] of this.select(selector, results)) {
      let after = record;
      const events: RaisedEvent[] = [];
      if (update !== undefined) {
        const applied = applyUpdate(after, update, now);
        if (!applied.ok) {
          results[id] = { success: false, id, message: applied.message };
          continue;
        }
        after = applied.value.record;
        events.push(...applied.value.events);
      }
      if (swaps !== undefined) {
        const swapped = swapUsers(after, swaps, now);
        after = swapped.record;
        events.push(...swapped.events);
      }
      if (after !== record) changes.push({ before: record, after, events });
      results[id] = { success: true, id, message: 'Annotations updated successfully' };
    }
    return { data: results, live: await this.commit(changes, now) };
  }

  /** Delete Comment Annotations: every selected thread with its comments. */
  async remove(selector: Selector): Promise<Mutation<Record<string, ItemResult>>> {
    const now = this.deps.now();
    const results: Record<string, ItemResult> = dict();
    const changes: Change[] = [];
    for (const [id, record] of this.select(selector, results)) {
      changes.push({ before: record, after: undefined, events: [{ type: 'comment_annotation.delete' }] });
      results[id] = { success: true, id, message: 'Deleted Successfully' };
    }
    return { data: results, live: await this.commit(changes, now) };
  }

  /** Add Comments: appends to one thread; answers the new commentIds. */
  async addComments(annotationId: string, inputs: readonly CommentInput[]): Promise<Mutation<number[]>> {
    const record = this.require(annotationId);
    const now = this.deps.now();
    const appended = appendComments(record.comments, record.nextCommentId, inputs, now);
    if (!appended.ok) throw invalidArgument(`data.commentData: ${appended.message}`);
    const { comments, added, nextCommentId } = appended.value;
    checkThreadGrowth(record.comments, comments, this.maxThreadBytes, added);
    const after: AnnotationRecord = { ...record, comments, nextCommentId, lastUpdated: now };
    const events = added.map((comment): RaisedEvent => ({ type: 'comment.add', targetComment: comment, actionUser: comment.from }));
    const live = await this.commit([{ before: record, after, events }], now);
    return { data: added.map((c) => c.commentId), live };
  }

  /** Get Comments (spec 4.10): all comments, or one entry per requested id with null for unknown ones. */
  comments(annotationId: string, commentIds: readonly number[] | undefined, userIds: readonly string[] | undefined): Array<CommentView | null> {
    const record = this.require(annotationId);
    const byUser = (c: { from: { userId: string } }): boolean => userIds === undefined || userIds.includes(c.from.userId);
    if (commentIds === undefined) return record.comments.filter(byUser).map(commentView);
    return commentIds.map((id) => {
      const comment = record.comments.find((c) => c.commentId === id);
      return comment !== undefined && byUser(comment) ? commentView(comment) : null;
    });
  }

  async updateComments(annotationId: string, commentIds: readonly number[], update: CommentUpdate): Promise<Mutation<Record<string, ItemResult>>> {
    const now = this.deps.now();
    const record = this.require(annotationId);
    const change = updateComments(record, commentIds, update, now);
    checkThreadGrowth(record.comments, change.record.comments, this.maxThreadBytes);
    return this.changeComments(annotationId, change, 'Updated successfully', now);
  }

  async deleteComments(annotationId: string, commentIds: readonly number[] | undefined): Promise<Mutation<Record<string, ItemResult>>> {
    const now = this.deps.now();
    return this.changeComments(annotationId, deleteComments(this.require(annotationId), commentIds, now), 'Deleted successfully', now);
  }

  private async changeComments(annotationId: string, change: CommentChange, message: string, now: number): Promise<Mutation<Record<string, ItemResult>>> {
    const before = this.require(annotationId);
    const results: Record<string, ItemResult> = dict();
    for (const [id, found] of change.found) {
      results[String(id)] = { success: found, id: String(id), message: found ? message : 'Not found' };
    }
    const changes = change.record === before ? [] : [{ before, after: change.record, events: change.events }];
    return { data: results, live: await this.commit(changes, now) };
  }

  private get maxThreadBytes(): number {
    return this.deps.maxCommentThreadBytes ?? DEFAULT_MAX_COMMENT_THREAD_BYTES;
  }

  private require(annotationId: string): AnnotationRecord {
    const record = this.records.get(annotationId);
    if (record === undefined) throw notFound(`annotation ${annotationId} not found in document ${this.ref.documentId}`);
    return record;
  }

  /** Threads the selector picks; requested ids that do not exist are reported into `results` as not found. */
  private select(selector: Selector, results: Record<string, ItemResult>): Array<[string, AnnotationRecord]> {
    const filter = {
      ...(selector.locationIds === undefined ? {} : { locationIds: selector.locationIds }),
      ...(selector.userIds === undefined ? {} : { userIds: selector.userIds }),
    };
    if (selector.annotationIds === undefined) {
      return [...this.records].filter(([, record]) => matches(record, filter));
    }
    const picked: Array<[string, AnnotationRecord]> = [];
    for (const id of new Set(selector.annotationIds)) {
      const record = this.records.get(id);
      if (record === undefined) results[id] = { success: false, id, message: 'Annotation not found.' };
      else if (matches(record, filter)) picked.push([id, record]);
    }
    return picked;
  }

  private generateId(taken: ReadonlySet<string>): string {
    for (;;) {
      const id = newAnnotationId();
      if (!this.records.has(id) && !taken.has(id)) return id;
    }
  }

  /**
   * Changes memory now, then writes the changed threads and one outbox row per raised event in one all-or-nothing
   * transaction of the group commit; resolves once committed. A failed commit undoes the memory change (`restore`
   * undoes what the caller changed besides the threads).
   */
  private async commit(changes: readonly Change[], now: number, restore?: () => void): Promise<LiveAnnotationChange[]> {
    if (changes.length === 0) return [];
    const owner = this.deps;
    // Called on `deps`, not detached from it: a deps object may implement `published` as a method.
    const published = (live: readonly LiveAnnotationChange[]): void => owner.published?.(live);
    const deps = { ref: this.ref, db: this.db, indexes: this.indexes, outbox: owner.outbox, records: (this.stored ??= new MeasuredMap(threadBytes)), published, legacy: this.legacy };
    const committed = await this.writes.submit(new ThreadChanges(deps, changes, now, (record) => this.view(record), restore));
    return committed.live;
  }
}

/** The thread's first comment is the target of comment_annotation.add (upstream V1 'newlyAdded'). */
const first = (record: AnnotationRecord): { targetComment?: CommentRecord } => {
  const comment = record.comments[0];
  return comment === undefined ? {} : { targetComment: comment };
};

/** A new thread's id when its input names none: upstream's shape (20 of [A-Za-z0-9]), time first (timeOrderedBase62). */
const newAnnotationId = (): string => timeOrderedBase62(Date.now(), 20);
