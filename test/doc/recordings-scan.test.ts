// Tests how far one page of recordings/get reads: ids of one document by key, an organization walked in chunks and at most PAGE_EXAMINE_RECORDINGS rows a page.
import t from 'tap';
import { PAGE_EXAMINE_RECORDINGS, Recordings, type Recording } from '../../src/doc/recordings.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { countRowsRead } from '../helpers/rows-read.js';

const API = 'key-1';
const clip = (annotationId: string) => ({ annotationId, recordingType: 'audio', recordedTime: { duration: 1 }, attachments: [{ url: `https://cdn.example.com/${annotationId}.webm`, mimeType: 'audio/webm', name: 'a', size: 1 }] });

t.test('a page examines at most PAGE_EXAMINE_RECORDINGS rows, with turns of the event loop, and its token goes on; ids of one document are read by key', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const recordings = new Recordings(store);
  const total = PAGE_EXAMINE_RECORDINGS + 1500;
  // Ten documents; the id looked for is the last row of the organization's range.
  for (let d = 0; d < 10; d++) {
    const ids = Array.from({ length: total / 10 }, (_, i) => `r${String(i).padStart(5, '0')}`);
    for (let i = 0; i < ids.length; i += 100) await recordings.add({ apiKey: API, organizationId: 'org', documentId: `d${d}` }, ids.slice(i, i + 100).map(clip));
  }
  const read = countRowsRead(store.records<Recording>(DB.recordings));

  let turned = false;
  setImmediate(() => (turned = true));
  const last = `r${String(total / 10 - 1).padStart(5, '0')}`;
  const first = await recordings.get(API, { organizationId: 'org', recordingIds: [last], pageSize: 10 });
  t.ok(turned, 'the event loop turned while the page walked');
  t.ok(read.count <= PAGE_EXAMINE_RECORDINGS, `examined ${read.count} rows of ${total}`);
  t.ok(first.pageToken !== undefined, 'a token: rows are left to examine');

  const found: string[] = [];
  let token = first.pageToken;
  found.push(...first.rows.map((r) => `${r.documentId}/${r.annotationId}`));
  while (token !== undefined) {
    const next = await recordings.get(API, { organizationId: 'org', recordingIds: [last], pageSize: 10, pageToken: token });
    found.push(...next.rows.map((r) => `${r.documentId}/${r.annotationId}`));
    token = next.pageToken;
  }
  t.same(found, Array.from({ length: 10 }, (_, d) => `d${d}/${last}`), 'following the tokens finds every match once, in order');

  read.reset();
  const byId = await recordings.get(API, { organizationId: 'org', documentId: 'd3', recordingIds: [last, 'r00002', 'missing', 'r00001'], pageSize: 2 });
  t.same(byId.rows.map((r) => r.annotationId), ['r00001', 'r00002'], 'ids of one document in id order');
  t.ok(byId.pageToken !== undefined, 'a token: an id is left');
  const rest = await recordings.get(API, { organizationId: 'org', documentId: 'd3', recordingIds: [last, 'r00002', 'missing', 'r00001'], pageSize: 2, pageToken: byId.pageToken ?? '' });
  t.same(rest.rows.map((r) => r.annotationId), [last], 'and the next page holds the rest');
  t.equal(rest.pageToken, undefined);
  t.equal(read.count, 0, 'read by key: no range walked');
});
