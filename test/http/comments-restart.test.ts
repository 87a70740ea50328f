// Tests that 1,000 threads of 10 comments survive a restart identically, with stable ordering and paging.
import t from 'tap';
import { env, envFor, type Env } from './comments-env.js';

const scope = { organizationId: 'org-r', documentId: 'doc-r' };
const THREADS = 1000;
const COMMENTS = 10;
const PER_REQUEST = 200;

async function allPages(call: Env['call'], order: 'asc' | 'desc', pageSize: number): Promise<unknown[]> {
  const rows: unknown[] = [];
  let pageToken: string | undefined;
  do {
    const res = await call<unknown[]>('/v2/commentannotations/get', { ...scope, order, pageSize, ...(pageToken === undefined ? {} : { pageToken }) });
    if (res.status !== 200) throw new Error(JSON.stringify(res.error));
    rows.push(...res.data);
    pageToken = res.extra['nextPageToken'] as string | undefined;
  } while (pageToken !== undefined);
  return rows;
}

t.test('1,000 threads of 10 comments survive a restart identically, with stable ordering and paging', async (t) => {
  // Delivery stays off, so the outbox keeps the events and the test can see them survive the restart.
  const first = await env(t, {}, { autoDeliver: false });
  // A channel the dispatcher plans for, which acts on new threads: events nothing acts on are not written, and those
  // only the activity log keeps are recorded with the change, without an outbox row (docs/delivery.md).
  t.equal((await first.call('/v2/workspace/webhookconfig/update', { useWebhookService: true, webhookServiceConfig: { rawNotificationUrl: 'https://hooks.example.com/raw' } })).status, 200);
  for (let start = 0; start < THREADS; start += PER_REQUEST) {
    const commentAnnotations = Array.from({ length: PER_REQUEST }, (_, j) => {
      const i = start + j;
      return {
        annotationId: `thread-${String(i).padStart(4, '0')}`,
        // Many ties on lastUpdated, so the tie-break is exercised.
        lastUpdated: 1_700_000_000_000 + (i % 97),
        createdAt: 1_700_000_000_000 - i,
        location: { id: `loc-${i % 7}` },
        commentData: Array.from({ length: COMMENTS }, (_, c) => ({
          commentText: `comment ${c} of ${i}`,
          from: { userId: `user-${(i + c) % 5}` },
          createdAt: 1_700_000_000_000 + c,
        })),
      };
    });
    const res = await first.call<Record<string, { success: boolean }>>('/v2/commentannotations/add', { ...scope, commentAnnotations });
    t.equal(Object.values(res.data).filter((r) => r.success).length, PER_REQUEST);
  }

  const before = {
    whole: await allPages(first.call, 'desc', 1000),
    desc: await allPages(first.call, 'desc', 64),
    asc: await allPages(first.call, 'asc', 150),
    comments: (await first.call('/v1/commentannotations/comments/get', { ...scope, annotationId: 'thread-0123' })).data,
    count: (await first.call('/v2/commentannotations/count/get', { organizationId: scope.organizationId, documentIds: [scope.documentId], userId: 'user-0' })).data,
    byLocation: (await first.call('/v2/commentannotations/get', { ...scope, locationIds: ['loc-3'], pageSize: 1000 })).data,
  };
  t.equal(before.whole.length, THREADS);
  t.same(before.desc, before.whole, 'small pages concatenate to the whole list');
  t.same(before.asc, [...before.whole].reverse(), 'ascending is exactly the reverse');
  t.equal((before.comments as unknown[]).length, COMMENTS);
  const events = first.server.server.services.outbox.read();
  t.equal(events.length, THREADS, 'one comment_annotation.add event per thread');

  const restarted = envFor(await first.server.restart(), first.creds);
  const after = {
    whole: await allPages(restarted.call, 'desc', 1000),
    desc: await allPages(restarted.call, 'desc', 64),
    asc: await allPages(restarted.call, 'asc', 150),
    comments: (await restarted.call('/v1/commentannotations/comments/get', { ...scope, annotationId: 'thread-0123' })).data,
    count: (await restarted.call('/v2/commentannotations/count/get', { organizationId: scope.organizationId, documentIds: [scope.documentId], userId: 'user-0' })).data,
    byLocation: (await restarted.call('/v2/commentannotations/get', { ...scope, locationIds: ['loc-3'], pageSize: 1000 })).data,
  };
  t.same(after, before, 'every read answers the same after the restart');
  t.same(restarted.server.server.services.outbox.read(), events, 'the outbox survives too');

  const more = await restarted.call<Record<string, { annotationId: string }>>('/v2/commentannotations/add', {
    ...scope,
    commentAnnotations: [{ commentData: [{ from: { userId: 'late' } }] }],
  });
  const added = Object.values(more.data)[0]?.annotationId ?? '';
  const latest = await restarted.call<Array<{ annotationId: string; annotationNumber: number }>>('/v2/commentannotations/get', { ...scope, annotationIds: [added] });
  t.equal(latest.data[0]?.annotationNumber, THREADS + 1, 'numbering continues after the restart');
});
