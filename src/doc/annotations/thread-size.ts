// Owns how far one comment thread may grow: its comments counted, and measured as JSON, before a change adds to them.
import { failedPrecondition } from '../../errors.js';
import { MAX_COMMENTS_PER_THREAD } from '../../limits.js';
import { limitRefusals } from '../../metrics/instruments.js';
import type { CommentRecord } from './model.js';

/**
 * Each comment's size as JSON, measured once per comment object: records are immutable and a thread's change keeps the
 * objects of the comments it does not touch, so a change measures only the comments it writes (and a thread read from
 * disk is measured once, at its first change).
 */
const measured = new WeakMap<CommentRecord, number>();

export function commentBytes(comment: CommentRecord): number {
  let bytes = measured.get(comment);
  if (bytes === undefined) {
    bytes = Buffer.byteLength(JSON.stringify(comment), 'utf8');
    measured.set(comment, bytes);
  }
  return bytes;
}

/** The comments' bytes as JSON, summed. */
export function commentsBytes(comments: readonly CommentRecord[]): number {
  let bytes = 0;
  for (const comment of comments) bytes += commentBytes(comment);
  return bytes;
}

/**
 * Refuses (FAILED_PRECONDITION naming the limit, counted in plait_limit_refusals_total{limit="comment_thread_size"})
 * a change that leaves a thread with more than MAX_COMMENTS_PER_THREAD comments, or more than `maxBytes` of comments as
 * JSON (MAX_COMMENT_THREAD_BYTES; 0: none), unless it leaves it no larger than it was. A thread is one LMDB record
 * written whole by each of its changes, and sent whole to live clients: one workspace adding to one thread made every
 * change cost the whole thread, 1.3 s of the event loop at 58,000 comments (bench/README.md, "Twentieth session: noisy
 * neighbours, second pass").
 */
export function checkThreadGrowth(before: readonly CommentRecord[], after: readonly CommentRecord[], maxBytes: number): void {
  if (after.length > MAX_COMMENTS_PER_THREAD && after.length > before.length) {
    limitRefusals.comment_thread_size++;
    throw failedPrecondition(`data.commentData: the thread would hold ${after.length} comments, past the limit of ${MAX_COMMENTS_PER_THREAD} comments a thread; nothing was written`);
  }
  if (maxBytes === 0) return;
  const bytes = commentsBytes(after);
  if (bytes > maxBytes && bytes > commentsBytes(before)) {
    limitRefusals.comment_thread_size++;
    throw failedPrecondition(`data.commentData: the thread's comments would take ${bytes} bytes as JSON, past its size limit of ${maxBytes} (MAX_COMMENT_THREAD_BYTES); nothing was written`);
  }
}
