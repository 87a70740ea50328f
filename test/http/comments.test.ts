// Tests every comment annotation and comment operation over real HTTP, including bad input for each required field.
import t from 'tap';
import { env } from './comments-env.js';

const scope = { organizationId: 'org1', documentId: 'doc1' };
const resolved = { id: 'RESOLVED', name: 'Resolved', type: 'terminal', color: '#0a0', lightColor: '#efe', svg: '<svg/>' };
const open = { id: 'OPEN', name: 'Open', type: 'default', color: '#625DF5', lightColor: '#E7E8FA', svg: '<svg/>' };
const high = { id: 'P1', name: 'High', color: '#f00', lightColor: '#fee' };
const alice = { userId: 'alice', name: 'Alice', email: 'alice@example.com' };
const bob = { userId: 'bob', name: 'Bob', email: 'bob@example.com' };

t.test('add, get, update, count and delete comment annotations on v1 and v2 paths', async (t) => {
  const { call } = await env(t);
  const added = await call<Record<string, { success: boolean; annotationId: string; commentIds: number[]; message: string }>>('/v1/commentannotations/add', {
    ...scope,
    commentAnnotations: [
      {
        annotationId: 'thread-1',
        location: { id: 'page-1', locationName: 'Home' },
        targetElement: { elementId: 'para-3', targetText: 'quick brown', occurrence: 1 },
        commentData: [
          {
            commentText: 'Hi @bob',
            commentHtml: '<p>Hi @bob</p>',
            from: alice,
            taggedUserContacts: [{ text: '@bob', userId: 'bob', contact: { email: bob.email, name: bob.name, userId: 'bob' } }],
          },
          { commentText: 'second', from: alice },
        ],
        status: open,
        priority: high,
        assignedTo: bob,
        context: { section: 'intro' },
      },
      { commentData: [{ commentText: 'generated id, whole element', from: bob }], targetElement: { elementId: 'hero', selectAllContent: true } },
      { annotationId: 'bad:id', commentData: [{ commentText: 'x', from: bob }] },
      { annotationId: 'suggest-1', type: 'suggestion', suggestion: { newValue: 'fast' }, commentData: [{ commentText: 'use "fast"', from: bob }] },
    ],
  });
  t.equal(added.status, 200);
  t.match(added.data['thread-1'], { success: true, annotationId: 'thread-1', commentIds: [1, 2] });
  t.match(added.data['bad:id'], { success: false, message: /must not contain ":"/ }, 'an id with ":" is refused for that item only');
  const generated = Object.values(added.data).find((r) => r.success && r.annotationId !== 'thread-1' && r.annotationId !== 'suggest-1');
  t.match(generated?.annotationId, /^[A-Za-z0-9]{20}$/, 'ids are generated when omitted');

  const again = await call<Record<string, { success: boolean; message: string }>>('/v2/commentannotations/add', {
    ...scope,
    commentAnnotations: [{ annotationId: 'thread-1', commentData: [{ from: alice }] }],
  });
  t.match(again.data['thread-1'], { success: false, message: /already exists/ });

  const all = await call<Array<Record<string, unknown>>>('/v2/commentannotations/get', { ...scope });
  t.equal(all.data.length, 3);
  const thread = all.data.find((a) => a['annotationId'] === 'thread-1');
  t.match(thread, {
    annotationNumber: 1,
    type: 'comment',
    location: { id: 'page-1' },
    targetElement: { elementId: 'para-3', targetText: 'quick brown', occurrence: 1 },
    status: { id: 'OPEN' },
    priority: { id: 'P1' },
    assignedTo: { userId: 'bob' },
    context: { section: 'intro' },
    from: { userId: 'alice' },
    metadata: { organizationId: 'org1', documentId: 'doc1' },
    comments: [{ commentId: 1, type: 'text', status: 'added', commentHtml: '<p>Hi @bob</p>', taggedUserContacts: [{ userId: 'bob' }] }, { commentId: 2 }],
  });
  t.match(all.data.find((a) => a['annotationId'] === 'suggest-1'), { type: 'suggestion', suggestion: { status: 'pending', newValue: 'fast' } });

  const byIds = await call<Array<{ annotationId: string } | null>>('/v1/commentannotations/get', { ...scope, annotationIds: ['suggest-1', 'missing', 'thread-1'] });
  t.same(byIds.data.map((a) => a?.annotationId ?? null), ['suggest-1', null, 'thread-1'], 'a missing id gives null in its place');

  const filtered = await call<Array<{ annotationId: string }>>('/v2/commentannotations/get', { ...scope, locationIds: ['page-1'], mentionedUserIds: ['bob'] });
  t.same(filtered.data.map((a) => a.annotationId), ['thread-1']);
  const byAuthor = await call<Array<{ annotationId: string }>>('/v2/commentannotations/get', { ...scope, userIds: ['bob'], order: 'asc' });
  t.equal(byAuthor.data.length, 2);

  const updated = await call<Record<string, { success: boolean }>>('/v1/commentannotations/update', {
    ...scope,
    annotationIds: ['thread-1', 'ghost'],
    updatedData: { status: resolved, statusUpdatedByUserId: 'bob', priority: null, assignedTo: alice, context: { section: 'body' } },
  });
  t.match(updated.data, { 'thread-1': { success: true }, ghost: { success: false, message: 'Annotation not found.' } });
  const suggestion = await call<Record<string, { success: boolean }>>('/v2/commentannotations/update', {
    ...scope,
    annotationIds: ['suggest-1'],
    updatedData: { suggestion: { status: 'accepted', newValue: 'fast' } },
  });
  t.match(suggestion.data, { 'suggest-1': { success: true } });
  const notSuggestion = await call<Record<string, { success: boolean; message: string }>>('/v2/commentannotations/update', {
    ...scope,
    annotationIds: ['thread-1'],
    updatedData: { suggestion: { status: 'accepted' } },
  });
  t.match(notSuggestion.data['thread-1'], { success: false, message: /type "suggestion"/ });

  const after = await call<Array<Record<string, unknown>>>('/v2/commentannotations/get', { ...scope, annotationIds: ['thread-1'] });
  t.match(after.data[0], { status: { id: 'RESOLVED' }, resolvedByUserId: 'bob', assignedTo: { userId: 'alice' }, context: { section: 'body' } });
  t.notOk(after.data[0] !== undefined && 'priority' in after.data[0], 'priority null clears it');
  const resolvedOnly = await call<unknown[]>('/v2/commentannotations/get', { ...scope, statusIds: ['RESOLVED'], resolvedBy: 'bob' });
  t.equal(resolvedOnly.data.length, 1);

  const swapped = await call('/v2/commentannotations/update', { ...scope, updateUsers: [{ oldUser: { userId: 'bob' }, newUser: { userId: 'robert', name: 'Robert' } }] });
  t.equal(swapped.status, 200);
  const afterSwap = await call<unknown[]>('/v2/commentannotations/get', { ...scope, userIds: ['robert'] });
  t.equal(afterSwap.data.length, 2, 'swapped users are the new authors');

  const count = await call('/v1/commentannotations/count/get', { organizationId: 'org1', documentIds: ['doc1', 'empty-doc'], userId: 'alice' });
  t.same(count.data, { doc1: { total: 3, unread: 2 }, 'empty-doc': { total: 0, unread: 0 } }, 'threads by others that alice never answered are unread');
  const countOpen = await call('/v2/commentannotations/count/get', { organizationId: 'org1', documentIds: ['doc1'], userId: 'alice', statusIds: ['OPEN'] });
  t.same(countOpen.data, { doc1: { total: 2, unread: 2 } });

  const deleted = await call<Record<string, { success: boolean; message: string }>>('/v1/commentannotations/delete', { ...scope, annotationIds: ['suggest-1', 'ghost'] });
  t.match(deleted.data, { 'suggest-1': { success: true, message: 'Deleted Successfully' }, ghost: { success: false, message: 'Annotation not found.' } });
  const byUser = await call<Record<string, { success: boolean }>>('/v2/commentannotations/delete', { ...scope, userIds: ['robert'] });
  t.equal(Object.keys(byUser.data).length, 1, 'delete by user removes that user’s threads');
  const byLocation = await call<Record<string, { success: boolean }>>('/v2/commentannotations/delete', { ...scope, locationIds: ['page-1'] });
  t.same(Object.keys(byLocation.data), ['thread-1']);
  t.same((await call<unknown[]>('/v2/commentannotations/get', { ...scope })).data, []);
});

t.test('comments in a thread: add, get (read shape, nulls), update, delete', async (t) => {
  const { call } = await env(t);
  await call('/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 't1', commentData: [{ commentText: 'root', from: alice }] }] });
  const added = await call<number[]>('/v1/commentannotations/comments/add', {
    ...scope,
    annotationId: 't1',
    commentData: [{ commentText: 'reply', from: bob }, { commentId: 500, commentHtml: '<b>custom id</b>', from: alice }],
  });
  t.same(added.data, [2, 500]);
  const clash = await call('/v2/commentannotations/comments/add', { ...scope, annotationId: 't1', commentData: [{ commentId: 500, from: bob }] });
  t.equal(clash.error?.status, 'INVALID_ARGUMENT');
  const next = await call<number[]>('/v2/commentannotations/comments/add', { ...scope, annotationId: 't1', commentData: [{ commentText: 'after', from: bob }] });
  t.same(next.data, [501], 'generated ids continue past custom ones');

  const all = await call<Array<Record<string, unknown>>>('/v1/commentannotations/comments/get', { ...scope, annotationId: 't1' });
  t.equal(all.data.length, 4);
  t.match(all.data[1], { commentId: 2, commentText: 'reply', commentHtml: '', from: bob, status: 'added', type: 'text' });
  t.match(all.data[1]?.['lastUpdated'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'lastUpdated is ISO 8601');
  const picked = await call<Array<{ commentId: number } | null>>('/v2/commentannotations/comments/get', { ...scope, annotationId: 't1', commentIds: [500, 9, 2] });
  t.same(picked.data.map((c) => c?.commentId ?? null), [500, null, 2], 'unknown comment ids give null');
  const byUser = await call<Array<{ commentId: number }>>('/v2/commentannotations/comments/get', { ...scope, annotationId: 't1', userIds: ['bob'] });
  t.same(byUser.data.map((c) => c.commentId), [2, 501]);

  const updated = await call('/v1/commentannotations/comments/update', {
    ...scope,
    annotationId: 't1',
    commentIds: [2, 77],
    updatedData: { commentText: 'reply (edited)', from: bob },
  });
  t.same(updated.data, { 2: { success: true, id: '2', message: 'Updated successfully' }, 77: { success: false, id: '77', message: 'Not found' } });
  const edited = await call<Array<Record<string, unknown>>>('/v2/commentannotations/comments/get', { ...scope, annotationId: 't1', commentIds: [2] });
  t.match(edited.data[0], { commentText: 'reply (edited)', status: 'updated' });

  const deleted = await call('/v2/commentannotations/comments/delete', { ...scope, annotationId: 't1', commentIds: [500, 42] });
  t.same(deleted.data, { 500: { success: true, id: '500', message: 'Deleted successfully' }, 42: { success: false, id: '42', message: 'Not found' } });
  const rest = await call('/v1/commentannotations/comments/delete', { ...scope, annotationId: 't1' });
  t.same(Object.keys(rest.data as object).sort(), ['1', '2', '501'], 'omitting commentIds deletes every comment');

  const missing = await call('/v2/commentannotations/comments/get', { ...scope, annotationId: 'nope' });
  t.equal(missing.status, 404);
  t.equal(missing.error?.status, 'NOT_FOUND');
});

t.test('pages by lastUpdated with nextPageToken, in both orders, without repeats', async (t) => {
  const { call } = await env(t);
  const commentAnnotations = Array.from({ length: 25 }, (_, i) => ({
    annotationId: `a${String(i).padStart(2, '0')}`,
    lastUpdated: 1_000 + Math.floor(i / 3),
    commentData: [{ from: alice }],
  }));
  await call('/v2/commentannotations/add', { ...scope, commentAnnotations });
  for (const order of ['asc', 'desc'] as const) {
    const seen: string[] = [];
    let pageToken: string | undefined;
    let pages = 0;
    do {
      const res = await call<Array<{ annotationId: string; lastUpdated: number }>>('/v2/commentannotations/get', {
        ...scope,
        order,
        pageSize: 7,
        ...(pageToken === undefined ? {} : { pageToken }),
      });
      seen.push(...res.data.map((a) => a.annotationId));
      pageToken = res.extra['nextPageToken'] as string | undefined;
      pages++;
    } while (pageToken !== undefined);
    const expected = commentAnnotations.map((a) => a.annotationId);
    t.same(seen, order === 'asc' ? expected : [...expected].reverse(), `${order}: every thread once, in order`);
    t.equal(pages, 4);
  }
  const wrongOrder = await call('/v2/commentannotations/get', { ...scope, order: 'asc', pageSize: 5 });
  const token = (wrongOrder.extra['nextPageToken'] as string) ?? '';
  const mismatch = await call('/v2/commentannotations/get', { ...scope, order: 'desc', pageToken: token });
  t.equal(mismatch.error?.status, 'INVALID_ARGUMENT');
  const garbage = await call('/v2/commentannotations/get', { ...scope, pageToken: 'not-a-token' });
  t.match(garbage.error?.message, /pageToken/);
  const grouped = await call<Record<string, unknown[]>>('/v2/commentannotations/get', { organizationId: 'org1', groupByDocumentId: true, pageSize: 3 });
  t.same(Object.keys(grouped.data), ['doc1']);
  t.equal(grouped.data['doc1']?.length, 3);
});

t.test('bad input for each required field is INVALID_ARGUMENT naming the field', async (t) => {
  const { call } = await env(t);
  await call('/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 't1', commentData: [{ from: alice }] }] });
  const thread = { ...scope, annotationId: 't1' };
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['/v1/commentannotations/add', { documentId: 'd', commentAnnotations: [{ commentData: [{ from: alice }] }] }, /data\.organizationId is required/],
    ['/v1/commentannotations/add', { organizationId: 'o', commentAnnotations: [{ commentData: [{ from: alice }] }] }, /data\.documentId is required/],
    ['/v1/commentannotations/add', { ...scope }, /data\.commentAnnotations is required/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [] }, /data\.commentAnnotations must have at least 1/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{}] }, /data\.commentAnnotations\[0\]\.commentData is required/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{}] }] }, /commentData\[0\]\.from is required/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{ from: {} }] }] }, /from\.userId is required/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{ from: alice }], status: { ...open, lightColor: undefined } }] }, /status\.lightColor is required/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{ from: alice }], status: { ...open, svg: undefined } }] }, /status needs svg or iconUrl/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{ from: alice }], status: { ...open, type: 'closed' } }] }, /status\.type must be one of/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{ from: alice }], priority: { id: 'P', name: 'n', color: 'c' } }] }, /priority\.lightColor is required/],
    ['/v1/commentannotations/add', { ...scope, commentAnnotations: [{ commentData: [{ from: alice }], location: { locationName: 'x' } }] }, /location\.id is required/],
    [
      '/v1/commentannotations/add',
      { ...scope, commentAnnotations: [{ commentData: [{ from: alice, taggedUserContacts: [{ text: '@b', userId: 'b' }] }] }] },
      /taggedUserContacts\[0\]\.contact is required/,
    ],
    ['/v1/commentannotations/get', { documentId: 'd' }, /data\.organizationId is required/],
    ['/v1/commentannotations/get', { organizationId: 'o', order: 'newest' }, /data\.order must be one of/],
    ['/v1/commentannotations/get', { organizationId: 'o', annotationIds: Array.from({ length: 31 }, (_, i) => `a${i}`) }, /at most 30/],
    ['/v1/commentannotations/update', { documentId: 'd', updatedData: { context: {} } }, /data\.organizationId is required/],
    ['/v1/commentannotations/update', { organizationId: 'o', updatedData: { context: {} } }, /data\.documentId is required/],
    ['/v1/commentannotations/update', { ...scope, annotationIds: ['t1'] }, /data\.updatedData or data\.updateUsers is required/],
    ['/v1/commentannotations/update', { ...scope, annotationIds: ['t1'], updatedData: {} }, /data\.updatedData must have at least 1/],
    ['/v1/commentannotations/update', { ...scope, annotationIds: ['t1'], updatedData: { colour: 'red' } }, /data\.updatedData\.colour is not an accepted field/],
    ['/v1/commentannotations/update', { ...scope, updateUsers: [{ oldUser: alice }] }, /updateUsers\[0\]\.newUser is required/],
    ['/v1/commentannotations/delete', { documentId: 'd' }, /data\.organizationId is required/],
    ['/v1/commentannotations/delete', { organizationId: 'o' }, /data\.documentId is required/],
    ['/v1/commentannotations/count/get', { documentIds: ['d'], userId: 'u' }, /data\.organizationId is required/],
    ['/v1/commentannotations/count/get', { organizationId: 'o', userId: 'u' }, /data\.documentIds is required/],
    ['/v1/commentannotations/count/get', { organizationId: 'o', documentIds: ['d'] }, /data\.userId is required/],
    ['/v1/commentannotations/comments/add', { ...scope, commentData: [{ from: alice }] }, /data\.annotationId is required/],
    ['/v1/commentannotations/comments/add', { ...thread }, /data\.commentData is required/],
    ['/v1/commentannotations/comments/add', { ...thread, commentData: [{ commentText: 'x' }] }, /commentData\[0\]\.from is required/],
    ['/v1/commentannotations/comments/add', { ...thread, commentData: [{ from: alice, commentId: -1 }] }, /commentId must be >= 0/],
    ['/v1/commentannotations/comments/get', { organizationId: 'o', annotationId: 't1' }, /data\.documentId is required/],
    ['/v1/commentannotations/comments/get', { ...scope }, /data\.annotationId is required/],
    ['/v1/commentannotations/comments/get', { ...thread, commentIds: ['x'] }, /data\.commentIds\[0\] must be an integer/],
    ['/v1/commentannotations/comments/update', { ...thread, updatedData: { from: alice } }, /data\.commentIds is required/],
    ['/v1/commentannotations/comments/update', { ...thread, commentIds: [1] }, /data\.updatedData is required/],
    ['/v1/commentannotations/comments/update', { ...thread, commentIds: [1], updatedData: { commentText: 'x' } }, /data\.updatedData\.from is required/],
    ['/v1/commentannotations/comments/delete', { organizationId: 'o', documentId: 'd' }, /data\.annotationId is required/],
  ];
  for (const [path, data, message] of cases) {
    const res = await call(path, data);
    t.equal(res.status, 400, `${path} ${JSON.stringify(data).slice(0, 80)}`);
    t.equal(res.error?.status, 'INVALID_ARGUMENT');
    t.match(res.error?.message, message);
  }
});

t.test('get by folderId reads only the documents filed in that folder', async (t) => {
  const { call } = await env(t);
  const org = { organizationId: 'org-f' };
  await call('/v2/organizations/add', { organizations: [{ organizationId: 'org-f' }] });
  await call('/v2/organizations/folders/add', { ...org, folders: [{ folderId: 'drafts', folderName: 'Drafts' }] });
  await call('/v2/organizations/documents/add', { ...org, folderId: 'drafts', documents: [{ documentId: 'in-1' }, { documentId: 'in-2' }] });
  await call('/v2/organizations/documents/add', { ...org, documents: [{ documentId: 'out' }] });
  for (const documentId of ['in-1', 'in-2', 'out']) {
    await call('/v2/commentannotations/add', { ...org, documentId, commentAnnotations: [{ annotationId: `on-${documentId}`, commentData: [{ from: alice }] }] });
  }
  const inFolder = await call<Array<{ annotationId: string }>>('/v2/commentannotations/get', { ...org, folderId: 'drafts', order: 'asc' });
  t.same(inFolder.data.map((a) => a.annotationId).sort(), ['on-in-1', 'on-in-2']);
  const narrowed = await call<Array<{ annotationId: string }>>('/v2/commentannotations/get', { ...org, folderId: 'drafts', documentIds: ['in-2', 'out'] });
  t.same(narrowed.data.map((a) => a.annotationId), ['on-in-2']);
  const unknown = await call('/v2/commentannotations/get', { ...org, folderId: 'nope' });
  t.equal(unknown.error?.status, 'NOT_FOUND');
});
