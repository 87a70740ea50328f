// Tests the record databases' encodings: JSON rows behind their marker byte for JSON_ROWS, msgpack elsewhere, and the msgpack rows of schema 10 still read.
import { join } from 'node:path';
import { open, type Key } from 'lmdb';
import t from 'tap';
import { ActivityStore, type ActivityRecord } from '../../src/delivery/activity-store.js';
import { NotificationStore, type NotificationRecord } from '../../src/delivery/notification-store.js';
import { ENVIRONMENT_FOLDER, Store } from '../../src/store/env.js';
import { DB, JSON_ROWS } from '../../src/store/keys.js';
import { jsonRows, MSGPACK_OPTIONS } from '../../src/store/record-codec.js';

const API = 'key-1';

function activity(id: string, timestamp: number, text: string): ActivityRecord {
  return {
    id,
    featureType: 'comment',
    actionType: 'comment.add',
    actionUser: { userId: 'u1', name: 'Zoë 山田' },
    targetEntityId: 'ann-1',
    entityData: { annotationId: 'ann-1', comments: [{ commentId: 1, commentText: text, attachments: [], taggedUserContacts: [] }], priority: null, count: 2.5 },
    displayMessageTemplate: '{{actionUser}} added a comment',
    displayMessageTemplateData: { actionUser: 'u1', nested: [[1, 'two'], { three: true }] },
    metadata: { apiKey: API, documentId: 'doc-1', organizationId: 'org-1' },
    timestamp,
    origin: 'event',
    immutable: true,
  };
}

function notification(id: string, timestamp: number): NotificationRecord {
  return {
    id,
    notificationSource: 'comment',
    notificationSourceData: { annotationId: 'ann-1', commentText: 'ß → ✓' },
    actionUser: { userId: 'u1' },
    displayBodyMessage: '😀 two-byte and astral',
    displayHeadlineMessageTemplate: '{{actionUser}} mentioned you',
    displayHeadlineMessageTemplateData: { actionUser: 'u1' },
    metadata: { apiKey: API, documentId: 'doc-1', organizationId: 'org-1' },
    notifyUsers: { u2: true },
    notifyUsersByUserId: { u2: true },
    notifyAll: false,
    readByUserIds: [],
    timestamp,
  };
}

t.test('JSON_ROWS are the activity-log and notification records', async (t) => {
  t.same([...JSON_ROWS].sort(), [DB.activities, DB.notifications].sort());
});

t.test('a JSON_ROWS row is the marker byte and the JSON text; it reads back as written, strings of every width too', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const activities = new ActivityStore(store);
  const record = activity('act_1', 1_000, 'naïve café — 山田さん 😀 \u0000 "quoted"');
  await activities.addAll([record]);
  const bytes = store.records<ActivityRecord>(DB.activities).getBinary([API, 'org-1', 'act_1']);
  t.ok(bytes !== undefined);
  t.equal(bytes?.[0], 0xc1, 'the marker, a byte msgpack never uses');
  t.same(JSON.parse(Buffer.from(bytes ?? []).toString('utf8', 1)), record, 'then the record as JSON');
  t.same(activities.get(API, 'org-1', 'act_1'), record);
  const index = store.records<unknown>(DB.activityTimes).getBinary([API, 'org-1', 1_000, 'act_1']);
  t.equal(index?.[0], 0xde, 'its time-index row is msgpack (a map)');
  t.same((await activities.page(API, { organizationId: 'org-1' }, { pageSize: 10 })).rows, [record], 'and a page reads it');
});

t.test('other record databases stay msgpack', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  await store.transaction(() => store.records<unknown>(DB.annotations).putSync([API, 'org-1', 'doc-1', 1], { annotationId: 'a', text: 'x' }));
  const bytes = store.records<unknown>(DB.annotations).getBinary([API, 'org-1', 'doc-1', 1]);
  t.equal(bytes?.[0], 0xde, 'a msgpack map (map 16: how msgpackr writes a plain object)');
});

t.test('a schema-10 directory: its msgpack activity and notification rows read, and a row written again is JSON', async (t) => {
  const dir = t.testdir();
  // As a schema-10 build wrote them: every record database msgpack, through lmdb-js's own encoder.
  const old = open({ path: join(dir, ENVIRONMENT_FOLDER) });
  const db = (name: string) => old.openDB<unknown, Key>({ name, encoding: 'msgpack', ...MSGPACK_OPTIONS });
  const before = activity('act_old', 500, 'written as msgpack — ünïcode');
  await old.transaction(() => {
    db(DB.activities).putSync([API, 'org-1', 'act_old'], before);
    db(DB.activityTimes).putSync([API, 'org-1', 500, 'act_old'], { documentId: 'doc-1', targetEntityId: 'ann-1', featureType: 'comment', actionType: 'comment.add', userId: 'u1' });
    db(DB.notifications).putSync([API, 'org-1', 'ntf_old'], notification('ntf_old', 600));
    db(DB.notificationTimes).putSync([API, 'org-1', 600, 'ntf_old'], { documentId: 'doc-1', notifyAll: false, userIds: ['u2'] });
    db(DB.meta).putSync('schemaVersion', 10);
  });
  await old.close();

  const store = Store.open(dir);
  t.teardown(() => store.close());
  t.equal(store.foundSchemaVersion, 10);
  t.equal(store.records<number>(DB.meta).get('schemaVersion'), 11, 're-stamped: a build that reads only 10 now refuses it');
  const activities = new ActivityStore(store);
  const notifications = new NotificationStore(store);
  t.not(store.records<unknown>(DB.activities).getBinary([API, 'org-1', 'act_old'])?.[0], 0xc1, 'the old row is msgpack');
  t.same(activities.get(API, 'org-1', 'act_old'), before, 'and reads as written');
  await activities.addAll([activity('act_new', 700, 'new')]);
  t.same((await activities.page(API, { organizationId: 'org-1', userId: 'u1' }, { pageSize: 10 })).rows.map((r) => r.id), ['act_new', 'act_old'], 'old and new rows page together, filtered by their index rows');
  t.same((await notifications.page(API, { organizationId: 'org-1', userId: 'u2' }, { pageSize: 10 })).rows, [notification('ntf_old', 600)]);
  await notifications.updateEach(API, 'org-1', [{ id: 'ntf_old', change: (n) => ({ ...n, notifyUsers: { u2: true, u3: true } }) }]);
  t.equal(store.records<unknown>(DB.notifications).getBinary([API, 'org-1', 'ntf_old'])?.[0], 0xc1, 'rewritten, the row is JSON');
  t.same(notifications.get(API, 'org-1', 'ntf_old')?.notifyUsers, { u2: true, u3: true });
});

t.test('the codec refuses a value JSON cannot hold at all, and reads embedded binary of an old row as a copy', async (t) => {
  const env = open({ path: join(t.testdir(), ENVIRONMENT_FOLDER) });
  t.teardown(() => env.close());
  const db = env.openDB<unknown, string>({ name: 'old', encoding: 'msgpack', ...MSGPACK_OPTIONS });
  const codec = jsonRows(db);
  t.throws(() => codec.encode(undefined), { message: /must encode as JSON, not undefined/ });
  t.throws(() => codec.encode(10n), TypeError, 'a BigInt throws, as msgpack without its extension would');
  t.throws(() => jsonRows(env.openDB<Uint8Array, string>({ name: 'bytes', encoding: 'binary' })), { message: /encodes as msgpack/ }, 'the old rows need a msgpack decoder');
  await db.put('k', { bytes: new Uint8Array([1, 2, 3]) });
  const raw = db.getBinary('k');
  t.ok(raw !== undefined);
  const decoded = codec.decode(raw ?? new Uint8Array()) as { bytes: Uint8Array };
  raw?.fill(0);
  t.same([...decoded.bytes], [1, 2, 3], 'not a view of the buffer lmdb-js reuses');
});
