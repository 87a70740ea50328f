// Tests the bench's REST commit floor: a comment is answered once it is in LMDB, a malformed one is refused and not stored.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { open, type DatabaseOptions } from 'lmdb';
import t from 'tap';
import { launchServer } from '../../bench/lib/launch.js';

t.test('rest-floor answers a comment after storing it and refuses a body without the fields it stores', async (t) => {
  const server = await launchServer('rest-floor', { keepData: true });
  t.teardown(() => rmSync(server.dataDir, { recursive: true, force: true }));
  const post = async (body: string): Promise<{ status: number; json: { result?: { data?: { annotationId?: string } } } }> => {
    const res = await fetch(`http://127.0.0.1:${server.port}/v1/commentannotations/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: res.status, json: (await res.json()) as { result?: { data?: { annotationId?: string } } } };
  };
  const comment = { organizationId: 'org-1', documentId: 'doc-1', commentAnnotations: [{ commentData: [{ commentText: 'x', from: { userId: 'u1' } }] }] };
  const answers = await Promise.all([post(JSON.stringify({ data: comment })), post(JSON.stringify({ data: comment }))]);
  t.same(answers.map((a) => a.status), [200, 200]);
  const ids = answers.map((a) => a.json.result?.data?.annotationId);
  t.equal(new Set(ids).size, 2, 'each comment gets its own id');
  t.equal((await post('{"data":')).status, 400, 'a body that is not JSON');
  t.equal((await post(JSON.stringify({ data: { organizationId: 'org-1' } }))).status, 400, 'a body without the fields');
  await server.stop();

  const root = open({ path: join(server.dataDir, 'db'), maxDbs: 4, readOnly: true });
  t.teardown(() => root.close());
  // Read as written: plain msgpack maps (src/store/env.ts's options), not msgpackr's records.
  const options: DatabaseOptions & { name: string; useRecords: boolean; mapsAsObjects: boolean } = { name: 'comments', encoding: 'msgpack', useRecords: false, mapsAsObjects: true };
  const comments = root.openDB<{ annotationId: string; commentAnnotations: unknown }>(options);
  const stored = Array.from(comments.getRange({}), ({ value }) => value);
  t.same(stored.map((row) => row.annotationId).sort(), [...ids].sort(), 'exactly the answered comments are stored');
  t.same(stored[0]?.commentAnnotations, comment.commentAnnotations);
});
