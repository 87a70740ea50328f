// Tests src/doc/annotations/thread-changes.ts: when a thread change needs no child transaction of its own (`bounded`), activity and notification records included.
import t, { type Test } from 'tap';
import type { DocumentKey } from '../../src/document-key.js';
import { DocumentWrites } from '../../src/doc/document-writes.js';
import { annotationView, type AnnotationRecord } from '../../src/doc/annotations/model.js';
import { buildAnnotation } from '../../src/doc/annotations/mutations.js';
import { ThreadChanges } from '../../src/doc/annotations/thread-changes.js';
import { threadIndexes } from '../../src/doc/annotations/time-index.js';
import { ActivityChannel } from '../../src/delivery/channels/activity.js';
import { ActivityStore } from '../../src/delivery/activity-store.js';
import { NotificationChannel } from '../../src/delivery/channels/notification.js';
import { NotificationStore } from '../../src/delivery/notification-store.js';
import { DeliveryQueue } from '../../src/delivery/queue.js';
import { Outbox } from '../../src/events/outbox.js';
import type { EventAudience } from '../../src/events/types.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { DeliveryConfigStore } from '../../src/tenant/delivery-config-store.js';
import { DEFAULT_NOTIFICATION_CONFIG, updateActivityConfig, updateNotificationConfig } from '../../src/tenant/delivery-configs.js';

const NOW = 1_763_900_000_000;

/** A store whose root counts the child transactions the group commit opens. */
function countingStore(path: string): { store: Store; children: () => number } {
  let children = 0;
  const store = Store.open(path, {
    transactions: (root) => ({
      transaction: (body) => root.transaction(body),
      childTransaction: (body) => {
        children++;
        return root.childTransaction(body);
      },
    }),
  });
  return { store, children: () => children };
}

/** A new thread's change on `ref`, as Add Comment Annotations makes it (its event included). */
/** From now on, counts the `get` calls on the databases (answers the count so far). */
function countGets(dbs: ReadonlyArray<{ get: (key: never) => unknown }>): () => number {
  let count = 0;
  for (const db of dbs) {
    const get = db.get.bind(db);
    db.get = (key: never) => (count++, get(key));
  }
  return () => count;
}

function newThread(store: Store, outbox: Outbox, ref: DocumentKey, number: number, comment: Record<string, unknown> = {}): ThreadChanges {
  const built = buildAnnotation({ commentData: [{ commentText: 'x', from: { userId: 'u1' }, ...comment }] }, `thread${number}`, number, NOW);
  if (!built.ok) throw new Error(built.message);
  const record = built.value;
  const deps = { ref, db: store.records<AnnotationRecord>(DB.annotations), indexes: threadIndexes(store), outbox, records: new Map<string, AnnotationRecord>(), published: undefined, legacy: undefined };
  const events = [{ type: 'comment_annotation.add' as const, actionUser: record.from, ...(record.comments[0] === undefined ? {} : { targetComment: record.comments[0] }) }];
  return new ThreadChanges(deps, [{ before: undefined, after: record, events }], NOW, (each) => annotationView(ref, each), undefined);
}

const nobody: EventAudience = { wants: () => false };
const everyone: EventAudience = { wants: () => true };
const ref: DocumentKey = { apiKey: 'key_bounded', organizationId: 'org', documentId: 'doc' };

/** A counting store closed at the test's end, and its outbox with `audience` as the channels that plan events. */
function opened(t: Test, audience: EventAudience): { store: Store; children: () => number; outbox: Outbox } {
  const { store, children } = countingStore(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  outbox.setAudience(audience);
  return { store, children, outbox };
}

t.test('a thread change no channel wants an event of writes its rows without a child transaction of its own', async (t) => {
  const { store, children, outbox } = opened(t, nobody);
  const writes = new DocumentWrites(store);
  const changes = [1, 2, 3].map((n) => newThread(store, outbox, ref, n));
  t.ok(changes.every((change) => change.bounded));
  await Promise.all(changes.map((change) => writes.submit(change)));
  t.equal(children(), 1, "the batch's child transaction only");
  t.equal(store.records<AnnotationRecord>(DB.annotations).get([ref.apiKey, ref.organizationId, ref.documentId, 2])?.annotationId, 'thread2');
  t.equal(store.records<number>(DB.annotationIds).get([ref.apiKey, ref.organizationId, 'thread3', ref.documentId]), 3, 'its index rows too');
  t.equal([...store.records<unknown>(DB.annotationTimes).getKeys({})].length, 3);
});

t.test('a thread change whose event a recorder that does not say it is bounded wants, or whose key might not fit, keeps its own child transaction', async (t) => {
  const { store, children, outbox } = opened(t, nobody);
  const recorded: string[] = [];
  outbox.setRecorders([{ name: 'other', wants: () => true, record: (_tx, event) => void recorded.push(event.type) }]);
  const wanted = newThread(store, outbox, ref, 1);
  t.notOk(wanted.bounded, 'what that recorder writes might be refused');
  await new DocumentWrites(store).submit(wanted);
  t.equal(children(), 1, 'its own child, no batch child');
  t.same(recorded, ['comment_annotation.add']);
  outbox.setRecorders([]);
  // Ids past MAX_ID_BYTES, as a directory's data from before that limit could hold.
  const long = { ...ref, documentId: '中'.repeat(500), organizationId: '中'.repeat(200) };
  t.notOk(newThread(store, outbox, long, 2).bounded, '2,100 bytes of ids: the key might not fit');
  t.ok(newThread(store, outbox, ref, 3).bounded, 'the same change on short ids is bounded');
});

t.test('a thread change whose event only the activity log and notifications record writes them without a child transaction of its own', async (t) => {
  const { store, children, outbox } = opened(t, nobody);
  const configs = new DeliveryConfigStore(store);
  const activities = new ActivityStore(store);
  const notifications = new NotificationStore(store);
  const activity = new ActivityChannel({ configs, activities });
  const notification = new NotificationChannel({ configs, queue: new DeliveryQueue(store), notifications });
  outbox.setRecorders([activity, notification.recorder]);
  // As activityconfig/update and notificationconfig/update enable them: every comment trigger on, sent at once.
  await configs.update(ref.apiKey, 'activity', (stored) => updateActivityConfig(stored, { isEnabled: true, enabledTime: NOW - 1 }, NOW - 1));
  await configs.update(ref.apiKey, 'notification', (stored) => updateNotificationConfig(stored ?? DEFAULT_NOTIFICATION_CONFIG, { useNotificationService: true }));
  const before = children();
  const mention = { commentText: '@u2 x', taggedUserContacts: [{ text: '@u2', userId: 'u2', contact: { userId: 'u2', name: 'U2', email: 'u2@example.com' } }] };
  const changes = [1, 2, 3].map((n) => newThread(store, outbox, ref, n, mention));
  t.ok(changes.every((change) => change.bounded), 'its records are keyed by the organization and ids Plait makes');
  const recordReads = countGets([store.records<unknown>(DB.activities), store.records<unknown>(DB.notifications)]);
  const writes = new DocumentWrites(store);
  await Promise.all(changes.map((change) => writes.submit(change)));
  t.equal(children() - before, 1, "the batch's child transaction only");
  t.equal(recordReads(), 0, 'the records of a new event are written without reading for a stored one first (putNew)');
  t.equal(Array.from(activities.all(ref.apiKey, ref.organizationId)).length, 3, 'each thread its activity record, in the same transaction');
  t.same(Array.from(notifications.all(ref.apiKey, ref.organizationId), (n) => Object.keys(n.notifyUsersByUserId)), [['u2'], ['u2'], ['u2']], 'and its notification to the mentioned user');
  t.ok(notification.recorder.bounded?.(ref.apiKey, ref.organizationId), 'the notification recorder says so');

  // An organization id that leaves no room for the activity's id, and a recorder that does not say it is bounded.
  t.notOk(activity.bounded(ref.apiKey, 'o'.repeat(1940)), 'the time-index key would not fit');
  t.ok(activity.bounded(ref.apiKey, 'o'.repeat(1900)));
  outbox.setRecorders([activity, { name: 'other', wants: () => true, record: () => undefined }]);
  t.notOk(newThread(store, outbox, ref, 4).bounded, 'a recorder that does not say it is bounded');
});

t.test('a thread change whose event gets an outbox row for the dispatcher writes it without a child transaction of its own', async (t) => {
  const { store, children, outbox } = opened(t, everyone);
  const changes = [1, 2, 3].map((n) => newThread(store, outbox, ref, n));
  t.ok(changes.every((change) => change.bounded), 'an outbox row is keyed by its seq');
  const writes = new DocumentWrites(store);
  await Promise.all(changes.map((change) => writes.submit(change)));
  t.equal(children(), 1, "the batch's child transaction only");
  t.same((await outbox.claim({ limit: 10, leaseMs: 1000, now: NOW })).map((event) => event.type), ['comment_annotation.add', 'comment_annotation.add', 'comment_annotation.add'], 'each thread its event, committed with it');
  // In a cluster the node's id is part of the key: one too long to fit keeps the change in a child of its own.
  t.notOk(newThread(store, new Outbox(store, { node: 'n'.repeat(1990) }), ref, 4).bounded);
  t.ok(newThread(store, new Outbox(store, { node: 'node-1' }), ref, 5).bounded);
});
