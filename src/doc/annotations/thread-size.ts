// Owns how far one comment thread may grow: its comments counted, and measured as JSON, before a change adds to them.
import { failedPrecondition } from '../../errors.js';
import { MAX_COMMENTS_PER_THREAD } from '../../limits.js';
import { limitRefusals } from '../../metrics/instruments.js';
import { jsonLength } from '../measured-map.js';
import type { AnnotationRecord, CommentRecord } from './model.js';

/**
 * Each comment's size as JSON, measured once per comment object: records are immutable and a thread's change keeps the
 * objects of the comments it does not touch, so a change measures only the comments it writes (and a thread read from
 * disk is measured once, at its first change).
 */
const measured = new WeakMap<CommentRecord, number>();

/**
 * A thread's running size: each comments array's bytes, summed once. Arrays are immutable as well, and the array a
 * change leaves is the `before` of the thread's next change, so a comment added to a thread of 1,000 costs the bytes
 * of that comment, not a walk of the other 999 (bench/README.md, "Twenty-first session: the comment write path").
 */
const totals = new WeakMap<readonly CommentRecord[], number>();

export function commentBytes(comment: CommentRecord): number {
  let bytes = measured.get(comment);
  if (bytes === undefined) {
    bytes = Buffer.byteLength(JSON.stringify(comment), 'utf8');
    measured.set(comment, bytes);
  }
  return bytes;
}

/**
 * About a thread's size as JSON (jsonLength): what the loaded-documents budget counts of a document's threads
 * (`MeasuredMap`). A long thread's comments are summed once per comments array (commentsBytes, as the thread bound
 * does), so a change to it does not walk them all; a short one's are walked, which costs less than remembering them.
 */
export function threadBytes(record: AnnotationRecord): number {
  const { comments } = record;
  let bytes = jsonLength(record, 'comments') + 14;
  if (comments.length > LONG_THREAD) return bytes + commentsBytes(comments);
  for (const comment of comments) bytes += jsonLength(comment) + 1;
  return bytes;
}

/** Comments past which a thread's are summed once per array rather than walked at each measure. */
const LONG_THREAD = 8;

/** The comments' bytes as JSON, summed (once per array). */
export function commentsBytes(comments: readonly CommentRecord[]): number {
  let bytes = totals.get(comments);
  if (bytes === undefined) {
    bytes = 0;
    for (const comment of comments) bytes += commentBytes(comment);
    totals.set(comments, bytes);
  }
  return bytes;
}

/** Only for `after` = `before` followed by `added` (Add Comments): its size is the thread's so far plus what is added. */
export function appendedBytes(before: readonly CommentRecord[], added: readonly CommentRecord[], after: readonly CommentRecord[]): number {
  let bytes = totals.get(after);
  if (bytes === undefined) {
    bytes = commentsBytes(before);
    for (const comment of added) bytes += commentBytes(comment);
    totals.set(after, bytes);
  }
  return bytes;
}

/**
 * Refuses (FAILED_PRECONDITION naming the limit, counted in plait_limit_refusals_total{limit="comment_thread_size"})
 * a change that leaves a thread with more than MAX_COMMENTS_PER_THREAD comments, or more than `maxBytes` of comments as
 * JSON (MAX_COMMENT_THREAD_BYTES; 0: none), unless it leaves it no larger than it was. A thread is one LMDB record
 * written whole by each of its changes, and sent whole to live clients: one workspace adding to one thread made every
 * change cost the whole thread, 1.3 s of the event loop at 58,000 comments (bench/README.md, "Twentieth session: noisy
 * neighbours, second pass"). `added`: `after` is `before` followed by these (an append), so its size is the running one.
 */
export function checkThreadGrowth(before: readonly CommentRecord[], after: readonly CommentRecord[], maxBytes: number, added?: readonly CommentRecord[]): void {
  if (after.length > MAX_COMMENTS_PER_THREAD && after.length > before.length) {
    limitRefusals.comment_thread_size++;
    throw failedPrecondition(`data.commentData: the thread would hold ${after.length} comments, past the limit of ${MAX_COMMENTS_PER_THREAD} comments a thread; nothing was written`);
  }
  if (maxBytes === 0) return;
  const bytes = added === undefined ? commentsBytes(after) : appendedBytes(before, added, after);
  if (bytes > maxBytes && bytes > commentsBytes(before)) {
    limitRefusals.comment_thread_size++;
    throw failedPrecondition(`data.commentData: the thread's comments would take ${bytes} bytes as JSON, past its size limit of ${maxBytes} (MAX_COMMENT_THREAD_BYTES); nothing was written`);
  }
}
