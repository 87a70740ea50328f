// Tests what adding a comment to a long thread reads of it: ids assigned without walking the thread, its size kept as a running sum.
import t from 'tap';
import type { CommentRecord } from '../../src/doc/annotations/model.js';
import { appendComments, buildAnnotation } from '../../src/doc/annotations/mutations.js';
import { checkThreadGrowth, commentsBytes } from '../../src/doc/annotations/thread-size.js';

const NOW = 1_763_900_000_000;
const from = { userId: 'u1' };

/** A thread of `n` comments (ids 1..n, nextCommentId n + 1). */
function thread(n: number): { comments: readonly CommentRecord[]; nextCommentId: number } {
  const built = buildAnnotation({ commentData: Array.from({ length: n }, (_, i) => ({ commentText: `c${i}`, from })) }, 'a', 1, NOW);
  if (!built.ok) throw new Error(built.message);
  return built.value;
}

/** The comments, each counting reads of its commentId into `reads`. */
function counted(comments: readonly CommentRecord[], reads: { n: number }): CommentRecord[] {
  return comments.map((comment) => {
    const copy = { ...comment };
    Object.defineProperty(copy, 'commentId', { enumerable: true, get: () => (reads.n++, comment.commentId) });
    return copy;
  });
}

/** The array, counting reads of its elements into `reads` (indexing and iteration both read through `get`). */
function watched(comments: readonly CommentRecord[], reads: { n: number }): readonly CommentRecord[] {
  return new Proxy(comments, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads.n++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

t.test('ids assigned from nextCommentId do not read the thread; an id the caller gives is checked against every id', async (t) => {
  const base = thread(500);
  const reads = { n: 0 };
  const existing = counted(base.comments, reads);
  const auto = appendComments(existing, base.nextCommentId, [{ commentText: 'x', from }, { commentText: 'y', from }], NOW);
  if (!auto.ok) throw new Error(auto.message);
  t.same(auto.value.added.map((c) => c.commentId), [501, 502]);
  t.equal(auto.value.nextCommentId, 503);
  t.equal(reads.n, 0, 'no comment id of the thread was read');

  const taken = appendComments(existing, base.nextCommentId, [{ commentId: 250, from }], NOW);
  t.same(taken, { ok: false, message: 'commentId 250 already exists in this annotation' });
  t.ok(reads.n >= 500, 'a given id is checked against the whole thread');

  const sameCall = appendComments(existing, base.nextCommentId, [{ from }, { commentId: 501, from }], NOW);
  t.same(sameCall, { ok: false, message: 'commentId 501 already exists in this annotation' }, 'and against the ids assigned before it in the same call');

  const gap = appendComments(
    existing.filter((c) => c.commentId !== 7),
    base.nextCommentId,
    [{ commentId: 7, from }, { from }, { commentId: 900, from }, { from }],
    NOW,
  );
  if (!gap.ok) throw new Error(gap.message);
  t.same(gap.value.added.map((c) => c.commentId), [7, 501, 900, 901], "a deleted comment's id may be given again; assigned ids go on above every given one");
  t.equal(gap.value.nextCommentId, 902);
});

t.test('an append measures the added comments only: the thread before it is summed once, and the sum is kept', async (t) => {
  const base = thread(1000).comments.slice(0, 999);
  const expected = (comments: readonly CommentRecord[]): number => comments.reduce((sum, c) => sum + Buffer.byteLength(JSON.stringify(c), 'utf8'), 0);
  const reads = { n: 0 };
  const before = watched(base, reads);
  t.equal(commentsBytes(before), expected(base), 'the first measure walks the thread');
  const walked = reads.n;
  t.equal(walked, 999);

  const one = appendComments(before, 1000, [{ commentText: 'one more', from }], NOW);
  if (!one.ok) throw new Error(one.message);
  const afterReads = { n: 0 };
  const after = watched(one.value.comments, afterReads);
  reads.n = 0;
  checkThreadGrowth(before, after, 4 * 1024 * 1024, one.value.added);
  t.equal(reads.n + afterReads.n, 0, 'neither the thread before nor the thread after was walked');
  t.equal(commentsBytes(after), expected(one.value.comments), 'the running size is the size');
  t.equal(afterReads.n, 0, 'and is kept for the next change, whose thread before it is this one');

  const tight = expected(one.value.comments) - 1;
  t.throws(() => checkThreadGrowth(before, after, tight, one.value.added), new RegExp(`take ${tight + 1} bytes as JSON, past its size limit of ${tight}`), 'the bound reads the running size');
});
