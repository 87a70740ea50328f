// Tests how far one comment thread may grow through a real server: 1,000 comments and MAX_COMMENT_THREAD_BYTES, refused past them, nothing written.
import t from 'tap';
import { MAX_COMMENTS_PER_THREAD } from '../../src/limits.js';
import { startTestServer } from '../helpers/server.js';

const scope = { organizationId: 'org', documentId: 'doc' };
const from = { userId: 'u1' };

t.test('a thread takes at most MAX_COMMENTS_PER_THREAD comments; past it an add is refused and writes nothing, other threads go on', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const created = await api.call(credentials, '/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 'long', commentData: [{ commentText: 'first', from }] }] });
  t.equal(created.status, 200);
  const fill = await api.call(credentials, '/v2/commentannotations/comments/add', { ...scope, annotationId: 'long', commentData: Array.from({ length: MAX_COMMENTS_PER_THREAD - 1 }, (_, i) => ({ commentText: `c${i}`, from })) });
  t.equal(fill.status, 200, 'up to the limit, in one call');

  const past = await api.call(credentials, '/v2/commentannotations/comments/add', { ...scope, annotationId: 'long', commentData: [{ commentText: 'one more', from }] });
  t.equal(past.status, 400);
  t.equal(past.body.error?.status, 'FAILED_PRECONDITION');
  t.match(past.body.error?.message, /1000 comments a thread/, 'the message names the limit');

  const listed = await api.call<unknown[]>(credentials, '/v2/commentannotations/comments/get', { ...scope, annotationId: 'long' });
  t.equal(listed.body.result?.data.length, MAX_COMMENTS_PER_THREAD, 'the refused comment was not written');
  const other = await api.call(credentials, '/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 'short', commentData: [{ commentText: 'hi', from }] }] });
  t.equal(other.status, 200, 'another thread of the document still takes comments');
  const removed = await api.call(credentials, '/v2/commentannotations/comments/delete', { ...scope, annotationId: 'long', commentIds: [1] });
  t.equal(removed.status, 200, 'a thread at the limit can shrink');
  const again = await api.call(credentials, '/v2/commentannotations/comments/add', { ...scope, annotationId: 'long', commentData: [{ commentText: 'fits again', from }] });
  t.equal(again.status, 200, 'and then take a comment again');

  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.match(metrics, /plait_limit_refusals_total\{limit="comment_thread_size"\} 1\n/, 'the refusal is counted');
});

t.test('a thread holds at most MAX_COMMENT_THREAD_BYTES of comments as JSON: adds and edits that would pass it are refused, edits that shrink pass', async (t) => {
  const { api } = await startTestServer(t, { maxCommentThreadBytes: 64 * 1024 });
  const credentials = await api.createWorkspace();
  const text = 'x'.repeat(10_000);
  t.equal((await api.call(credentials, '/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 'big', commentData: [{ commentText: text, from }] }] })).status, 200);
  for (let i = 0; i < 5; i++) {
    t.equal((await api.call(credentials, '/v2/commentannotations/comments/add', { ...scope, annotationId: 'big', commentData: [{ commentText: text, from }] })).status, 200, `comment ${i + 2} of 10 KB fits`);
  }
  const past = await api.call(credentials, '/v2/commentannotations/comments/add', { ...scope, annotationId: 'big', commentData: [{ commentText: text, from }] });
  t.equal(past.status, 400, 'a seventh 10 KB comment would take the thread past 64 KiB');
  t.match(past.body.error?.message, /MAX_COMMENT_THREAD_BYTES/, 'the message names the limit');

  const grow = await api.call(credentials, '/v2/commentannotations/comments/update', { ...scope, annotationId: 'big', commentIds: [1], updatedData: { from, commentText: 'y'.repeat(20_000) } });
  t.equal(grow.status, 400, 'an edit that would grow the thread past it is refused too');
  const shrink = await api.call(credentials, '/v2/commentannotations/comments/update', { ...scope, annotationId: 'big', commentIds: [1], updatedData: { from, commentText: 'short' } });
  t.equal(shrink.status, 200, 'an edit that shrinks it passes');
  const comments = await api.call<Array<{ commentText?: string }>>(credentials, '/v2/commentannotations/comments/get', { ...scope, annotationId: 'big' });
  t.same(comments.body.result?.data.map((c) => c.commentText?.length), [5, 10_000, 10_000, 10_000, 10_000, 10_000], 'what was refused was not written');
});
