// Tests src/doc/presence.ts and the expiry timer of src/doc/collab-state.ts: REST and sync presence, offline, expiry.
import { on, EventEmitter } from 'node:events';
import t from 'tap';
import { CollabDocuments, type LiveMessage } from '../../src/doc/collab-state.js';
import type { DocumentActorView } from '../../src/doc/peer.js';
import { DocumentWrites } from '../../src/doc/document-writes.js';
import { PresenceState, type LivePresenceChange } from '../../src/doc/presence.js';
import { Outbox } from '../../src/events/outbox.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import { decodeLiveMessage, encodeLiveMessage } from '../../src/ws/live-messages.js';

const ref = { apiKey: 'k1', organizationId: 'org', documentId: 'doc' };

t.test('REST presence: add defaults to online, update merges, delete removes', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const state = await PresenceState.load({ store, now: () => 5, offlineTtlMs: 100 }, ref);
  await state.upsert([{ userId: 'u1', name: 'Ann' }, { userId: 'u2', status: 'away' }]);
  await state.upsert([{ userId: 'u1', status: 'away' }]);
  t.same(
    state.list().map((u) => [u.userId, u.name, u.status, u.source]),
    [
      ['u1', 'Ann', 'away', 'rest'],
      ['u2', undefined, 'away', 'rest'],
    ],
  );
  t.same(state.list({ userIds: ['u2'] }).map((u) => u.userId), ['u2']);
  const live = await state.remove(['u2', 'nobody']);
  t.same(live.removed, ['u2']);
  const reloaded = await PresenceState.load({ store, now: () => 6, offlineTtlMs: 100 }, ref);
  t.same(reloaded.list().map((u) => [u.userId, u.status]), [['u1', 'away']], 'REST presence survives a reload');
});

t.test('an update that changes nothing writes nothing, keeps lastUpdated and publishes nothing', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  let now = 10;
  const published: LivePresenceChange[] = [];
  const state = await PresenceState.load({ store, now: () => now, offlineTtlMs: 100, published: (live) => published.push(live) }, ref);
  const stored = (): unknown => store.records<{ lastUpdated: number }>(DB.presence).get([ref.apiKey, ref.organizationId, ref.documentId, 'u1'])?.lastUpdated;
  await state.upsert([{ userId: 'u1', name: 'Ann', status: 'online' }]);
  t.equal(stored(), 10);
  now = 20;
  const heartbeat = await state.upsert([{ userId: 'u1', status: 'online' }, { userId: 'u1', name: 'Ann' }]);
  t.same([heartbeat.users, heartbeat.removed], [[], []], 'the same status and name again is no change');
  t.equal(stored(), 10, 'nothing written');
  t.match(state.list(), [{ userId: 'u1', lastUpdated: 10 }], 'lastUpdated is when the record last changed');
  t.equal(published.length, 1, 'no live message for it');
  const changed = await state.upsert([{ userId: 'u1', status: 'away' }]);
  t.match(changed.users, [{ userId: 'u1', status: 'away', lastUpdated: 20 }]);
  t.equal(stored(), 20);
  t.equal(published.length, 2);
  now = 30;
  await state.upsert([{ userId: 'u1', email: 'ann@example.com' }]);
  t.equal(stored(), 30, 'a new field is a change');
});

t.test('an update that changes nothing is answered only once what it saw has committed, and fails with it', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const writes = new DocumentWrites(store);
  const state = await PresenceState.load({ store, now: () => 1, offlineTtlMs: 100, writes }, ref);
  await state.upsert([{ userId: 'u1', status: 'online' }]);
  const order: string[] = [];
  const pending = state.upsert([{ userId: 'u1', status: 'away' }]).then(() => order.push('change'));
  const repeat = state.upsert([{ userId: 'u1', status: 'away' }]).then(() => order.push('repeat'));
  await Promise.all([pending, repeat]);
  t.same(order, ['change', 'repeat'], 'the repeat waited for the change it repeats');
  const failing = writes.submit({ write: () => { throw new Error('disk full'); }, undo: () => undefined });
  const refused = state.upsert([{ userId: 'u1', status: 'away' }]);
  await t.rejects(failing, /disk full/);
  await t.rejects(refused, { name: 'AppError', status: 'ABORTED' }, 'a repeat of state that did not commit is not acknowledged');
});

t.test('a sync user goes offline on their last disconnect and disappears after the delay (injected clock)', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  let now = 1_000;
  const state = await PresenceState.load({ store, now: () => now, offlineTtlMs: 500 }, ref);
  await state.connect('c1', { userId: 'u1', name: 'Ann' });
  await state.connect('c2', { userId: 'u1', name: 'Ann' });
  t.match(state.list(), [{ userId: 'u1', status: 'online', source: 'sync', connections: 2 }]);
  await state.disconnect('c1');
  t.match(state.list(), [{ status: 'online', connections: 1 }], 'still online while one connection is open');
  now = 2_000;
  await state.disconnect('c2');
  t.match(state.list(), [{ status: 'offline', offlineSince: 2_000, connections: 0 }]);
  t.equal(state.nextExpiry(), 2_500);
  now = 2_499;
  t.same((await state.expire()).removed, [], 'not before the delay');
  now = 2_500;
  t.same((await state.expire()).removed, ['u1']);
  t.same(state.list(), []);
  t.equal(state.nextExpiry(), undefined);
});

t.test('after a restart, users known only from sync connections are offline, then expire', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const first = await PresenceState.load({ store, now: () => 100, offlineTtlMs: 50 }, ref);
  await first.connect('c1', { userId: 'u1' });
  await first.upsert([{ userId: 'u2' }]);
  const second = await PresenceState.load({ store, now: () => 200, offlineTtlMs: 50 }, ref);
  t.same(second.list().map((u) => [u.userId, u.status]), [
    ['u1', 'offline'],
    ['u2', 'online'],
  ]);
  const third = await PresenceState.load({ store, now: () => 250, offlineTtlMs: 50 }, ref);
  t.same(third.list().map((u) => u.userId), ['u2'], 'expired while no one held the document');
});

t.test('sync connections fill the same bounded list: at the limit a new user takes an offline place, or goes unlisted with its connection kept', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  let now = 100;
  const state = await PresenceState.load({ store, now: () => now, offlineTtlMs: 1000, maxPresenceUsers: 2 }, ref);
  const refusals = limitRefusals.presence_users;
  await state.upsert([{ userId: 'rest-user' }]);
  await state.connect('c1', { userId: 'ann' });
  const unlisted = await state.connect('c2', { userId: 'bob' });
  t.same([unlisted.users, unlisted.removed], [[], []], 'a connection past the limit changes no list');
  t.same(state.list().map((u) => u.userId), ['ann', 'rest-user'], 'bob is not listed');
  t.equal(limitRefusals.presence_users, refusals + 1, 'and that is counted');
  await state.connect('c3', { userId: 'ann' });
  t.match(state.list({ userIds: ['ann'] }), [{ connections: 2 }], 'a listed user connects again at the limit');

  now = 200;
  await state.disconnect('c1');
  await state.disconnect('c3');
  t.match(state.list({ userIds: ['ann'] }), [{ status: 'offline', connections: 0 }]);
  await t.rejects(state.upsert([{ userId: 'rest-user', status: 'away' }, { userId: 'carol' }, { userId: 'dave' }]), { name: 'AppError', status: 'FAILED_PRECONDITION', message: /MAX_PRESENCE_USERS_PER_DOCUMENT/ }, 'two new users, one offline place: refused');
  t.equal(limitRefusals.presence_users, refusals + 2);
  const joined = await state.connect('c4', { userId: 'erin' });
  t.same(joined.removed, ['ann'], 'a new connection takes the offline user\'s place');
  t.same(state.list().map((u) => [u.userId, u.status]), [['erin', 'online'], ['rest-user', 'online']]);
  await state.disconnect('c2');
  t.same(state.list().map((u) => u.userId), ['erin', 'rest-user'], 'an unlisted user leaving changes nothing');
  t.equal(state.nextExpiry(), undefined, 'no one is offline');
});

/** A host that runs tasks in order and emits every broadcast, so a test can await the next one. */
class RecordingHost extends EventEmitter implements DocumentActorView {
  readonly key = ref;
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(task: () => T | Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch((error: unknown) => this.emit('failed', error));
    return result;
  }
  broadcast(bytes: Uint8Array): number {
    this.emit('message', decodeLiveMessage(bytes));
    return 1;
  }
  sendTo(): boolean {
    return false;
  }
}

t.test('the expiry timer removes an offline user and tells the document sockets', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const host = new RecordingHost();
  const docs = new CollabDocuments({
    store,
    outbox: new Outbox(store),
    now: Date.now,
    offlineTtlMs: 20,
    actors: { use: async (_ref, use) => use(host) },
    encode: encodeLiveMessage,
    log: createLogger('silent'),
  });
  t.teardown(() => docs.close());
  // Live messages are built only while a connection takes them: the watcher stays, u1 comes and goes.
  await docs.connect(ref, { sessionId: 'w1', userId: 'watcher', extensions: true });
  const peer = { sessionId: 'c1', userId: 'u1', extensions: false };
  await docs.connect(ref, peer);
  // Both messages buffered from here: under load the 20 ms expiry can fire before the offline row's deferred commit
  // publishes, and the two messages then come in one turn (a second `once` registered after the first missed it).
  const messages = on(host, 'message');
  await docs.disconnect(ref, peer);
  const [wentOffline] = (await messages.next()).value as [LiveMessage];
  t.match(wentOffline.presence.users, [{ userId: 'u1', status: 'offline' }]);
  const [expired] = (await messages.next()).value as [LiveMessage];
  await messages.return?.();
  t.same(expired.presence.removed, ['u1']);
  t.same(await docs.read(ref, (doc) => doc.presence.list({ userIds: ['u1'] })), []);
});
