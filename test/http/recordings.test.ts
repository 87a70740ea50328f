// Tests recordings: Plait's add and delete, upstream's get with its paging and filters, survival and document deletion.
import t from 'tap';
import { displayDuration } from '../../src/doc/recordings.js';
import { dataOf, directoryFixture, expectError } from '../helpers/directory.js';

interface RecordingRow {
  annotationId: string;
  type: string;
  documentId: string;
  recordingType: string;
  recordedTime: { duration: number; display: string };
  attachments: Array<{ attachmentId: string; url: string; mimeType: string; name: string; type: string; size: number }>;
  latestVersion: number;
}

const ORG = 'org-rec';
const clip = (annotationId: string, duration = 65_000) => ({
  annotationId,
  recordingType: 'screen',
  recordedTime: { duration },
  attachments: [{ url: `https://cdn.example.com/${annotationId}.webm`, mimeType: 'video/webm', name: `${annotationId}.webm`, size: 1234 }],
});

t.test('recordings added on documents are listed by get, filtered and paged; re-adding replaces', async (t) => {
  const fx = await directoryFixture(t);
  const added = dataOf(t, await fx.call<Record<string, { success: boolean; id: string }>>('/v2/recordings/add', { organizationId: ORG, documentId: 'd1', recordings: [clip('r1'), clip('r2')] }));
  t.same(Object.keys(added), ['r1', 'r2']);
  await fx.call('/v2/recordings/add', { organizationId: ORG, documentId: 'd2', recordings: [clip('r3', 3_725_000)] });
  const generated = dataOf(t, await fx.call<Record<string, { id: string }>>('/v2/recordings/add', { organizationId: ORG, documentId: 'd2', recordings: [{ ...clip('x'), annotationId: undefined }] }));
  t.equal(Object.keys(generated).length, 1, 'an annotation id is generated when none is given');

  const all = dataOf(t, await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG }));
  t.equal(all.length, 4, 'the whole organization');
  const r1 = all.find((r) => r.annotationId === 'r1');
  t.equal(r1?.type, 'recorder');
  t.same(r1?.recordedTime, { duration: 65_000, display: '1:05' });
  t.equal(r1?.attachments[0]?.type, 'video', 'attachment type from its MIME type');
  t.type(r1?.attachments[0]?.attachmentId, 'string');
  t.equal(all.find((r) => r.annotationId === 'r3')?.recordedTime.display, '1:02:05');

  const d1 = dataOf(t, await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG, documentId: 'd1' }));
  t.same(d1.map((r) => r.annotationId), ['r1', 'r2'], 'one document');
  const byId = dataOf(t, await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG, recordingIds: ['r3', 'nope'] }));
  t.same(byId.map((r) => r.annotationId), ['r3'], 'recordingIds filter');

  const page1 = await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG, pageSize: 3 });
  t.equal(dataOf(t, page1).length, 3);
  const token = page1.body.result?.['pageToken'];
  t.type(token, 'string', 'the cursor is named pageToken, as upstream names it for recordings');
  const page2 = await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG, pageSize: 3, pageToken: token });
  t.equal(dataOf(t, page2).length, 1);
  t.equal(page2.body.result?.['pageToken'], undefined, 'the last page has none');
  const ids = [...dataOf(t, page1), ...dataOf(t, page2)].map((r) => r.annotationId);
  t.equal(new Set(ids).size, 4, 'pages do not repeat or skip');

  await fx.call('/v2/recordings/add', { organizationId: ORG, documentId: 'd1', recordings: [{ ...clip('r1'), recordingType: 'audio' }] });
  const replaced = dataOf(t, await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG, recordingIds: ['r1'] }));
  t.equal(replaced[0]?.recordingType, 'audio');
  t.equal(replaced[0]?.latestVersion, 2);

  const deleted = dataOf(t, await fx.call<Record<string, { success: boolean }>>('/v2/recordings/delete', { organizationId: ORG, documentId: 'd1', recordingIds: ['r2', 'gone'] }));
  t.same([deleted['r2']?.success, deleted['gone']?.success], [true, false]);
  await fx.call('/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: 'd2' }] });
  await fx.call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ['d2'] });
  const left = dataOf(t, await fx.call<RecordingRow[]>('/v2/recordings/get', { organizationId: ORG }));
  t.same(left.map((r) => r.annotationId), ['r1'], 'deleting a document deletes its recordings');
});

t.test('bad recordings input is INVALID_ARGUMENT naming the field', async (t) => {
  const fx = await directoryFixture(t);
  expectError(t, await fx.call('/v2/recordings/add', { organizationId: ORG, documentId: 'd', recordings: [{ ...clip('a'), attachments: [{ url: 'ftp://x', mimeType: 'a/b', name: 'n', size: 1 }] }] }), 'INVALID_ARGUMENT', /url/);
  expectError(t, await fx.call('/v2/recordings/add', { organizationId: ORG, documentId: 'd', recordings: [{ ...clip('a:b') }] }), 'INVALID_ARGUMENT', /annotationId/);
  expectError(t, await fx.call('/v2/recordings/add', { organizationId: ORG, recordings: [clip('a')] }), 'INVALID_ARGUMENT', /documentId/);
  expectError(t, await fx.call('/v2/recordings/add', { organizationId: ORG, documentId: 'd', recordings: [{ ...clip('a'), recordedTime: { duration: -1 } }] }), 'INVALID_ARGUMENT', /duration/);
  expectError(t, await fx.call('/v2/recordings/get', { organizationId: ORG, pageToken: 'garbage' }), 'INVALID_ARGUMENT', /pageToken/);
  await fx.call('/v2/recordings/add', { organizationId: ORG, documentId: 'd1', recordings: [clip('a'), clip('b')] });
  const page = await fx.call<unknown[]>('/v2/recordings/get', { organizationId: ORG, documentId: 'd1', pageSize: 1 });
  expectError(t, await fx.call('/v2/recordings/get', { organizationId: ORG, documentId: 'd2', pageToken: page.body.result?.['pageToken'] }), 'INVALID_ARGUMENT', /another document/);
});

t.test('displayDuration', async (t) => {
  t.equal(displayDuration(0), '0:00');
  t.equal(displayDuration(59_400), '0:59');
  t.equal(displayDuration(3_600_000), '1:00:00');
});
