// Tests DeliveryConfigStore.memoized (one read per config inside it, what the dispatcher plans a round with; fresh reads outside) and current (a copy kept until changed()).
import t from 'tap';
import type { Planner } from '../../src/delivery/channel.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import { DeliveryQueue } from '../../src/delivery/queue.js';
import { Outbox } from '../../src/events/outbox.js';
import type { EventDraft } from '../../src/events/types.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { DeliveryConfigStore } from '../../src/tenant/delivery-config-store.js';
import type { ActivityConfig } from '../../src/tenant/delivery-configs.js';

const HOUR = 3_600_000;

function draft(documentId: string): EventDraft {
  const metadata = { apiKey: 'key', organizationId: 'org', documentId, document: { documentId }, organization: { organizationId: 'org' } };
  return { type: 'comment.add', apiKey: 'key', organizationId: 'org', documentId, data: { metadata } };
}

const activity = (isEnabled: boolean): ActivityConfig => ({ isEnabled });

t.test('inside memoized a config is read once (absent ones too); outside, and after it ends or throws, every read is fresh', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const configs = new DeliveryConfigStore(store);
  await configs.update('key', 'activity', () => activity(true));
  t.not(configs.stored('key', 'activity'), configs.stored('key', 'activity'), 'outside: each read decodes the row anew');
  configs.memoized(() => {
    const first = configs.stored('key', 'activity');
    t.same(first, { isEnabled: true });
    t.equal(configs.stored('key', 'activity'), first, 'inside: the same object, read once');
    t.equal(configs.stored('key', 'email'), undefined, 'an absent config reads undefined');
    t.equal(configs.stored('key', 'email'), undefined, 'and again from the memo');
    t.equal(configs.stored('other', 'activity'), undefined, 'per API key');
    t.equal(configs.memoized(() => configs.stored('key', 'activity')), first, 'a nested call shares the memo');
  });
  await configs.update('key', 'activity', () => activity(false));
  t.same(configs.stored('key', 'activity'), { isEnabled: false }, 'the memo ended with the call');
  t.throws(() => configs.memoized(() => {
    configs.stored('key', 'activity');
    throw new Error('planning failed');
  }), /planning failed/);
  await configs.update('key', 'activity', () => activity(true));
  t.same(configs.stored('key', 'activity'), { isEnabled: true }, 'a throwing body ends the memo too');
});

t.test('the dispatcher plans a round through `planning`: every event of the round sees one read of its config, the next round a fresh one', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  const configs = new DeliveryConfigStore(store);
  await configs.update('key', 'activity', () => activity(true));
  const seen: Array<{ documentId: string; config: ActivityConfig | undefined }> = [];
  const lines: string[] = [];
  const dispatcher = new Dispatcher({
    store,
    outbox,
    queue: new DeliveryQueue(store),
    planners: [{ name: 'reader', wants: () => true, plan: (_tx, event) => seen.push({ documentId: event.documentId, config: configs.stored(event.apiKey, 'activity') }) } satisfies Planner],
    clock: { now: () => Date.now() },
    log: createLogger('debug', {}, (line) => lines.push(line)),
    pollMs: HOUR,
    planning: (body) => configs.memoized(body),
  });
  await store.transaction((tx) => {
    for (const id of ['a', 'b', 'c']) outbox.append(tx, draft(id), Date.now());
  });
  t.equal(await dispatcher.pump(), 3);
  t.same(seen.map((s) => s.documentId), ['a', 'b', 'c'], 'every event planned, in order');
  t.equal(seen[1]?.config, seen[0]?.config, 'one read for the round');
  t.equal(seen[2]?.config, seen[0]?.config);
  await configs.update('key', 'activity', () => activity(false));
  await store.transaction((tx) => outbox.append(tx, draft('d'), Date.now()));
  t.equal(await dispatcher.pump(), 1);
  t.same(seen[3], { documentId: 'd', config: { isEnabled: false } }, 'the next round reads the updated config');
  t.same(outbox.read(), [], 'all acked');
  t.same(lines, [], 'nothing logged');
});

t.test('current keeps what it read (absent configs too) until a config may have changed, then reads again', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const configs = new DeliveryConfigStore(store);
  t.equal(configs.current('key', 'activity'), undefined, 'never configured');
  await store.transaction(() => void store.records<ActivityConfig>(DB.deliveryConfigs).putSync(['key', 'activity'], activity(true)));
  t.equal(configs.current('key', 'activity'), undefined, 'the absence is kept: a row written past the store is not seen');
  configs.changed();
  const read = configs.current('key', 'activity');
  t.same(read, { isEnabled: true }, 'read again after changed()');
  t.equal(configs.current('key', 'activity'), read, 'the same object, kept');
  t.equal(configs.current('key', 'notification'), undefined, 'per kind');
  await configs.update('key', 'activity', () => activity(false));
  t.same(configs.current('key', 'activity'), { isEnabled: false }, 'an update through the store drops the copy');
});
