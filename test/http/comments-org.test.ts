// Tests Get Comment Annotations across a whole organization (no document named): read from the committed rows, no document loaded.
import t from 'tap';
import { CHUNK_ROWS as SCAN_CHUNK } from '../../src/store/chunked-scan.js';
import { envFor, env } from './comments-env.js';

const alice = { userId: 'alice', name: 'Alice' };
const bob = { userId: 'bob', name: 'Bob' };

t.test('an organization-wide listing reads every committed thread in chunks without loading a document, and pages them', async (t) => {
  const first = await env(t);
  // More threads than one chunk of the scan, over three documents, with an author each can be filtered on.
  const perDocument = Math.ceil((SCAN_CHUNK + 200) / 3);
  for (const documentId of ['doc-a', 'doc-b', 'doc-c']) {
    const commentAnnotations = Array.from({ length: perDocument }, (_, i) => ({ annotationId: `${documentId}-${i}`, lastUpdated: 10_000 + i, commentData: [{ from: i % 10 === 0 ? bob : alice }] }));
    t.equal((await first.call('/v2/commentannotations/add', { organizationId: 'org1', documentId, commentAnnotations })).status, 200);
  }
  await first.call('/v2/commentannotations/add', { organizationId: 'org2', documentId: 'doc-a', commentAnnotations: [{ annotationId: 'elsewhere', commentData: [{ from: bob }] }] });
  const server = await first.server.restart();
  const { call } = envFor(server, first.creds);
  const actors = server.server.services.documentActors;
  t.equal(actors.loadedCount, 0, 'nothing loaded after the restart');

  const seen: string[] = [];
  let pageToken: string | undefined;
  do {
    const res = await call<Array<{ annotationId: string; metadata: { documentId: string } }>>('/v2/commentannotations/get', { organizationId: 'org1', pageSize: 500, ...(pageToken === undefined ? {} : { pageToken }) });
    t.equal(res.status, 200);
    seen.push(...res.data.map((a) => a.annotationId));
    pageToken = res.extra['nextPageToken'] as string | undefined;
  } while (pageToken !== undefined);
  t.equal(seen.length, 3 * perDocument, 'every thread of the organization, more than one chunk of the scan');
  t.equal(new Set(seen).size, seen.length, 'each once');
  t.notOk(seen.includes('elsewhere'), 'none of another organization');
  t.equal(actors.loadedCount, 0, 'and no document was loaded to read them');

  const bobs = await call<Array<{ from: { userId: string } }>>('/v2/commentannotations/get', { organizationId: 'org1', userIds: ['bob'], pageSize: 1000 });
  t.equal(bobs.data.length, 3 * Math.ceil(perDocument / 10), 'filters apply to the scanned rows');
  t.ok(bobs.data.every((a) => a.from.userId === 'bob'));

  // A thread changed after the restart is listed as it is now, whether or not its document is still loaded.
  await call('/v2/commentannotations/update', { organizationId: 'org1', documentId: 'doc-b', annotationIds: ['doc-b-1'], updatedData: { priority: { id: 'P1', name: 'High', color: '#f00', lightColor: '#fee' } } });
  const newest = await call<Array<{ annotationId: string; priority?: { id: string } }>>('/v2/commentannotations/get', { organizationId: 'org1', pageSize: 1 });
  t.match(newest.data, [{ annotationId: 'doc-b-1', priority: { id: 'P1' } }], 'the change is committed before its answer, so the scan sees it');
});
