// Tests src/doc/annotations/model.ts views and mutations.ts record building: the for-in copies give exactly what the spread forms gave.
import t from 'tap';
import { annotationView, commentView, type AnnotationInput, type AnnotationRecord, type CommentRecord } from '../../src/doc/annotations/model.js';
import { appendComments, buildAnnotation } from '../../src/doc/annotations/mutations.js';

const ref = { apiKey: 'k', organizationId: 'o', documentId: 'd' };
const NOW = 1_763_900_000_000;

/** The spread/rest forms the views had before they were rewritten for speed: the reference they must match, key order included. */
function referenceCommentView(comment: CommentRecord): unknown {
  const { commentId, lastUpdated, commentText, commentHtml, attachments, isCommentTextAvailable, ...rest } = comment;
  const text = commentText ?? '';
  const html = commentHtml ?? '';
  return { commentId, ...rest, type: 'text', commentText: text, commentHtml: html, lastUpdated: new Date(lastUpdated).toISOString(), attachments: attachments ?? [], isCommentTextAvailable: isCommentTextAvailable ?? (text !== '' || html !== '') };
}

function referenceAnnotationView(record: AnnotationRecord): unknown {
  const { comments, nextCommentId: _next, ...rest } = record;
  return { ...rest, sourceType: 'rest-api', metadata: { ...ref }, comments: comments.map(referenceCommentView) };
}

// A caller's extra fields are kept, one of them named __proto__ (JSON.parse makes it an own property).
const input = JSON.parse(
  JSON.stringify({
    annotationId: 'ignored-here',
    location: { id: 'loc', locationName: 'Page', extra: 1 },
    targetElement: { elementId: 'e1', targetText: 'hello', occurrence: 1 },
    status: { id: 'OPEN', name: 'Open', type: 'default', color: '#000', lightColor: '#fff', svg: '<svg/>' },
    priority: { id: 'P1', name: 'High', color: '#f00', lightColor: '#fcc' },
    assignedTo: { userId: 'u2', name: 'Two' },
    context: { any: ['thing'] },
    type: 'suggestion',
    suggestion: { text: 'new' },
    commentData: [
      { commentText: 'first', from: { userId: 'u1', photoUrl: 'p' }, custom: true, taggedUserContacts: [{ text: '@u2', userId: 'u2', contact: { email: 'u2@x', name: 'Two', userId: 'u2' } }] },
      { commentId: 7, commentHtml: '<b>x</b>', from: { userId: 'u1' }, createdAt: 5, attachments: [{ url: 'a' }], isCommentResolverUsed: true },
    ],
  }).replace('"custom":true', '"custom":true,"__proto__":{"polluted":true}'),
) as AnnotationInput;

t.test('a thread built from input and its view are what the spread forms gave, key order included', async (t) => {
  const built = buildAnnotation(input, 'a1', 3, NOW);
  if (!built.ok) throw new Error(built.message);
  const record = built.value;
  t.same(Object.keys(record), ['annotationId', 'annotationNumber', 'type', 'createdAt', 'lastUpdated', 'from', 'status', 'location', 'targetElement', 'priority', 'assignedTo', 'context', 'suggestion', 'comments', 'nextCommentId']);
  t.same(record.suggestion, { text: 'new', status: 'pending' });
  t.same(record.comments.map((c) => c.commentId), [1, 7]);
  t.equal(record.nextCommentId, 8);
  const first = record.comments[0] as CommentRecord & Record<string, unknown>;
  t.same(Object.keys(first), ['commentText', 'from', 'custom', '__proto__', 'commentId', 'createdAt', 'lastUpdated', 'status', 'taggedUserContacts']);
  t.same(Object.getOwnPropertyDescriptor(first, '__proto__')?.value, { polluted: true }, 'a field named __proto__ is copied as a field');
  t.equal(Object.getPrototypeOf(first), Object.prototype, 'and does not become the prototype');
  t.equal(JSON.stringify(annotationView(ref, record)), JSON.stringify(referenceAnnotationView(record)));
  for (const comment of record.comments) t.equal(JSON.stringify(commentView(comment)), JSON.stringify(referenceCommentView(comment)));
});

t.test('a minimal thread and appended comments match too', async (t) => {
  const built = buildAnnotation({ commentData: [{ from: { userId: 'u1' } }] }, 'a2', 1, NOW);
  if (!built.ok) throw new Error(built.message);
  t.equal(JSON.stringify(annotationView(ref, built.value)), JSON.stringify(referenceAnnotationView(built.value)));
  const appended = appendComments(built.value.comments, built.value.nextCommentId, [{ commentText: 'more', from: { userId: 'u3' } }, { commentId: 1, from: { userId: 'u3' } }], NOW);
  t.same(appended, { ok: false, message: 'commentId 1 already exists in this annotation' }, 'a used id fails the whole set');
  const ok = appendComments(built.value.comments, built.value.nextCommentId, [{ commentText: 'more', from: { userId: 'u3' }, lastUpdated: 9 }], NOW);
  if (!ok.ok) throw new Error(ok.message);
  t.same(ok.value.comments.map((c) => [c.commentId, c.createdAt, c.lastUpdated]), [[1, NOW, NOW], [2, NOW, 9]]);
  t.not(ok.value.comments, built.value.comments, 'a new array: the old record is unchanged');
  t.equal(built.value.comments.length, 1);
});
