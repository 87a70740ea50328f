// Tests the retention of advanced webhook messages (WEBHOOK_MESSAGE_RETENTION) and the runner's pruning passes, on a real store.
import t from 'tap';
import { Secrets } from '../../src/auth/secrets.js';
import { ManualClock } from '../../src/delivery/clock.js';
import { Endpoints, type MessageRecord } from '../../src/delivery/endpoints.js';
import { DeliveryQueue, type ChannelName, type DeliveryJob } from '../../src/delivery/queue.js';
import { DeliveryRunner, type ChannelRunner } from '../../src/delivery/runner.js';
import { createLogger, type Logger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB, SCHEMA_VERSION } from '../../src/store/keys.js';

const API = 'key-1';
const noJobs: ChannelRunner = { retryDelaysMs: [], attempt: async () => ({ ok: false, error: 'no job in this test', permanent: true }) };

function message(endpointId: string, id: string, createdAt: number, status: MessageRecord['status']): MessageRecord {
  return { id, endpointId, eventType: 'comment_annotation.add', eventId: `e-${id}`, body: '{}', createdAt, status, attempts: [], resends: 0 };
}

t.test('pruning removes settled messages made before the cut, with their index rows; pending and newer ones stay', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const endpoints = new Endpoints(store, Secrets.load(t.testdir(), undefined));
  const first = await endpoints.create(API, { url: 'https://example.com/a' }, 1);
  const second = await endpoints.create('key-2', { url: 'https://example.com/b' }, 1);
  await store.transaction((tx) => {
    endpoints.putMessage(tx, API, message(first.id, 'old-ok', 100, 'success'));
    endpoints.putMessage(tx, API, message(first.id, 'old-failed', 101, 'fail'));
    endpoints.putMessage(tx, API, message(first.id, 'old-pending', 102, 'pending'));
    endpoints.putMessage(tx, API, message(first.id, 'new-ok', 5_000, 'success'));
    endpoints.putMessage(tx, 'key-2', message(second.id, 'other-old', 100, 'success'));
  });
  t.equal(await endpoints.pruneMessages(1_000, 1), 1, 'at most the limit in one call');
  t.equal(await endpoints.pruneMessages(1_000), 2 + 3, 'the rest of the old settled messages, on every endpoint, and the three bodies no message refers to any more');
  t.equal(await endpoints.pruneMessages(1_000), 0, 'nothing more');
  t.same((await endpoints.listMessages(API, first.id, 10)).map((m) => [m.id, m.body]), [['new-ok', '{}'], ['old-pending', '{}']], 'the messages left keep their bodies');
  t.same(await endpoints.listMessages('key-2', second.id, 10), []);
  const rows = (name: typeof DB.webhookMessages | typeof DB.webhookMessageTimes | typeof DB.webhookBodies | typeof DB.webhookBodyTimes): number => Array.from(store.records<unknown>(name).getKeys()).length;
  t.same([rows(DB.webhookMessages), rows(DB.webhookMessageTimes)], [2, 2], 'no record without its index row, nor the other way');
  t.same([rows(DB.webhookBodies), rows(DB.webhookBodyTimes)], [2, 2], 'a body for each message left, with its time row');
});

t.test('a message\'s body is stored once for all its endpoints, and pruned once no endpoint refers to it', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const endpoints = new Endpoints(store, Secrets.load(t.testdir(), undefined));
  const ids: string[] = [];
  for (const url of ['https://example.com/a', 'https://example.com/b', 'https://example.com/c']) ids.push((await endpoints.create(API, { url }, 1)).id);
  const body = JSON.stringify({ type: 'comment_annotation.add', text: 'x'.repeat(3000) });
  await store.transaction((tx) => {
    for (const endpointId of ids) endpoints.putMessage(tx, API, { ...message(endpointId, 'msg_1', 100, 'pending'), body });
  });
  const bodies = store.records<{ body: string }>(DB.webhookBodies);
  t.same(Array.from(bodies.getKeys()), [[API, 'msg_1']], 'one body row for three endpoints');
  t.same(Array.from(store.records<{ body?: string }>(DB.webhookMessages).getRange({}), ({ value }) => value.body), [undefined, undefined, undefined], 'the records hold none');
  for (const endpointId of ids) t.equal(endpoints.message(API, endpointId, 'msg_1')?.body, body, 'each endpoint reads it back');
  // Settled on one endpoint, which rewrites its record: the body is not written again.
  const settled = endpoints.message(API, ids[0]!, 'msg_1')!;
  await store.transaction((tx) => endpoints.putMessage(tx, API, { ...settled, status: 'success' }));
  t.equal(bodies.getKeysCount(), 1);
  t.equal(await endpoints.pruneMessages(1_000), 1, 'the settled record goes; the others are pending and keep the body');
  t.equal(bodies.get([API, 'msg_1'])?.body, body);
  await endpoints.remove(API, ids[1]!);
  await endpoints.remove(API, ids[2]!);
  t.equal(await endpoints.pruneMessages(1_000), 1, 'its last endpoints deleted, the body goes at the next pass');
  t.equal(bodies.getKeysCount(), 0);
  t.equal(store.records<null>(DB.webhookBodyTimes).getKeysCount(), 0);
});

t.test('a record written before schema 7, with its body inline, is read as it is and keeps its body when rewritten', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const endpoints = new Endpoints(store, Secrets.load(t.testdir(), undefined));
  const endpoint = await endpoints.create(API, { url: 'https://example.com/a' }, 1);
  const old = { ...message(endpoint.id, 'msg_old', 100, 'pending'), body: '{"old":true}' };
  // As an older build wrote it: the record with its body, and its index row.
  await store.transaction(() => {
    store.records<MessageRecord>(DB.webhookMessages).putSync([API, endpoint.id, old.id], old);
    store.records<unknown>(DB.webhookMessageTimes).putSync([API, endpoint.id, old.createdAt, old.id], { status: 'pending' });
  });
  t.equal(endpoints.message(API, endpoint.id, old.id)?.body, '{"old":true}');
  await store.transaction((tx) => endpoints.putMessage(tx, API, { ...endpoints.message(API, endpoint.id, old.id)!, status: 'success' }));
  t.match(endpoints.message(API, endpoint.id, old.id), { status: 'success', body: '{"old":true}' }, 'rewritten without it, the body moved to its own row');
  t.equal(store.records<{ body?: string }>(DB.webhookMessages).get([API, endpoint.id, old.id])?.body, undefined);
});

t.test('a planned message is its index row alone until an attempt settles: read, listed and its body kept as a record\'s', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const endpoints = new Endpoints(store, Secrets.load(t.testdir(), undefined));
  const ids: string[] = [];
  for (const url of ['https://example.com/a', 'https://example.com/b']) ids.push((await endpoints.create(API, { url }, 1)).id);
  const planned = (endpointId: string): MessageRecord => ({ ...message(endpointId, 'msg_p', 100, 'pending'), eventId: 'evt_p', body: '{"planned":true}' });
  await store.transaction((tx) => ids.forEach((endpointId, i) => endpoints.addMessage(tx, API, planned(endpointId), i > 0)));
  const rows = (name: typeof DB.webhookMessages | typeof DB.webhookMessageTimes | typeof DB.webhookBodies): number => store.records<unknown>(name).getKeysCount();
  t.same([rows(DB.webhookMessages), rows(DB.webhookMessageTimes), rows(DB.webhookBodies)], [0, 2, 1], 'no record: an index row for each endpoint and one shared row');
  for (const endpointId of ids) {
    t.same(endpoints.message(API, endpointId, 'msg_p'), planned(endpointId), 'read as the record planning used to write');
    t.same(await endpoints.listMessages(API, endpointId, 10), [planned(endpointId)], 'and listed');
  }
  t.same(await endpoints.listMessages(API, ids[0]!, 10, 'success'), [], 'filtered on its status');
  t.equal(endpoints.message(API, 'ep_other', 'msg_p'), undefined, 'another endpoint has no such message');
  // Long past the retention and never attempted (its endpoint was never due): its body stays while it is pending.
  t.equal(await endpoints.pruneMessages(1_000_000), 0, 'a pending message and its body stay');
  t.equal(rows(DB.webhookBodies), 1);
  // Its first attempt settles: the record is written, at the same time, and the index row follows it.
  await store.transaction((tx) => endpoints.putMessage(tx, API, { ...endpoints.message(API, ids[0]!, 'msg_p')!, status: 'success' }));
  t.same([rows(DB.webhookMessages), rows(DB.webhookMessageTimes)], [1, 2]);
  t.match(await endpoints.listMessages(API, ids[0]!, 10), [{ id: 'msg_p', status: 'success', body: '{"planned":true}' }]);
  t.equal(await endpoints.pruneMessages(1_000_000), 1, 'the settled one goes; the other endpoint still refers to the body');
  t.equal(rows(DB.webhookBodies), 1);
  await endpoints.remove(API, ids[1]!);
  t.equal(await endpoints.pruneMessages(1_000_000), 1, 'its endpoint deleted with its index row, the body goes');
  t.same([rows(DB.webhookMessages), rows(DB.webhookMessageTimes), rows(DB.webhookBodies)], [0, 0, 0]);
});

t.test('a directory stamped 7: its messages (a record each, the body as text) are read, listed and pruned as they are, and it is re-stamped', async (t) => {
  const dir = t.testdir();
  const secretsDir = t.testdir();
  const old = Store.open(dir);
  const created = await new Endpoints(old, Secrets.load(secretsDir, undefined)).create(API, { url: 'https://example.com/a' }, 1);
  const records: MessageRecord[] = [message(created.id, 'msg_a', 100, 'pending'), message(created.id, 'msg_b', 200, 'success')];
  // As a build stamped 7 wrote them: the record without its body, its index row, the body as text with its time row.
  await old.transaction(() => {
    for (const { body, ...record } of records) {
      old.records<unknown>(DB.webhookMessages).putSync([API, created.id, record.id], record);
      old.records<unknown>(DB.webhookMessageTimes).putSync([API, created.id, record.createdAt, record.id], { status: record.status });
      old.records<string>(DB.webhookBodies).putSync([API, record.id], `{"was":"${record.id}"}`);
      old.records<null>(DB.webhookBodyTimes).putSync([record.createdAt, API, record.id], null);
    }
    old.records<number>(DB.meta).putSync('schemaVersion', 7);
  });
  await old.close();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  t.equal(store.foundSchemaVersion, 7);
  t.equal(store.records<number>(DB.meta).get('schemaVersion'), SCHEMA_VERSION, 're-stamped: a build that reads only 8 now refuses it');
  const endpoints = new Endpoints(store, Secrets.load(secretsDir, undefined));
  t.same(endpoints.message(API, created.id, 'msg_a'), { ...records[0], body: '{"was":"msg_a"}' });
  t.same((await endpoints.listMessages(API, created.id, 10)).map((m) => [m.id, m.status, m.body]), [['msg_b', 'success', '{"was":"msg_b"}'], ['msg_a', 'pending', '{"was":"msg_a"}']]);
  t.equal(await endpoints.pruneMessages(1_000), 2, 'the settled one and its body; the pending one keeps its');
  t.same((await endpoints.listMessages(API, created.id, 10)).map((m) => [m.id, m.body]), [['msg_a', '{"was":"msg_a"}']]);
});

t.test('the runner prunes in batches until one comes back short, or until one fails, which it logs', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  const channels: Record<ChannelName, ChannelRunner> = { email: noJobs, webhook: noJobs, advancedWebhook: noJobs, notification: noJobs, account: noJobs };
  const clock = new ManualClock(10 * 86_400_000);
  /** One pass of a runner whose log pruning answers `answers` in turn (an Error is thrown): its calls' limits, what it logged. */
  const pass = async (answers: Array<number | Error>): Promise<{ limits: number[]; errors: string[] }> => {
    const limits: number[] = [];
    const errors: string[] = [];
    const silent = createLogger('silent');
    const log: Logger = { ...silent, child: () => log, error: (message) => void errors.push(message) };
    const runner = new DeliveryRunner({
      queue,
      channels,
      clock,
      log,
      pruneLogs: async (now, limit) => {
        t.equal(now, clock.now(), 'the pass’s time');
        limits.push(limit);
        const answer = answers.shift();
        if (answer instanceof Error) throw answer;
        return answer ?? 0;
      },
    });
    await runner.prune(clock.now());
    return { limits, errors };
  };
  t.same(await pass([1000, 1000, 7]), { limits: [1000, 1000, 1000], errors: [] }, 'two full batches, then a short one ends the pass');
  t.same(await pass([1000, new Error('disk full')]), { limits: [1000, 1000], errors: ['pruning delivery logs failed'] }, 'a failed batch ends the pass, logged');

  // A runner stopped during a pass (the store is about to close) starts no further batch.
  let stop: () => Promise<void> = () => Promise.resolve();
  const limits: number[] = [];
  const stopping = new DeliveryRunner({
    queue,
    channels,
    clock,
    log: createLogger('silent'),
    pruneLogs: async (_now, limit) => {
      limits.push(limit);
      await stop();
      return limit;
    },
  });
  stop = () => stopping.stop();
  await stopping.prune(clock.now());
  t.same(limits, [1000], 'one full batch, then nothing after the stop');
});

t.test('finished jobs are pruned through their finishing time: pending ones and newer ones stay, a re-finished job moves', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  const job = (id: string): Omit<DeliveryJob, 'state' | 'attempt' | 'updatedAt'> => ({ id, channel: 'webhook', apiKey: API, target: 't', due: 0, createdAt: 0, payload: {} });
  await store.transaction((tx) => {
    for (const id of ['a', 'b', 'c', 'd', 'e']) queue.enqueue(tx, job(id));
  });
  const finish = (id: string, state: 'delivered' | 'failed' | 'cancelled', at: number): Promise<void> =>
    store.transaction((tx) => queue.replace(tx, { ...(queue.get(id) as DeliveryJob), state, updatedAt: at }));
  await finish('a', 'delivered', 100);
  await finish('b', 'failed', 200);
  await finish('c', 'cancelled', 5_000);
  await finish('d', 'delivered', 150);
  // `d` finished again later (a resend): only its latest finishing time counts.
  await finish('d', 'delivered', 6_000);
  t.equal(await queue.prune(1_000, 1), 1, 'at most the limit');
  t.equal(await queue.prune(1_000), 1);
  t.equal(await queue.prune(1_000), 0, 'nothing else finished before the cut');
  t.same(queue.counts(), { pending: 1, delivered: 1, failed: 0, cancelled: 1 }, 'e pending, c and d finished after the cut');
  t.same(queue.list().map((j) => j.id).sort(), ['c', 'd', 'e']);
  t.equal(await queue.prune(10_000), 2, 'later cuts take the rest of the finished ones');
  t.same(Array.from(store.records<unknown>(DB.deliveryFinished).getKeys()), [], 'no index row left behind');
});

t.test('finished jobs of a directory written before their index (schema 3) are indexed once at start', async (t) => {
  const dir = t.testdir();
  const old = Store.open(dir);
  await old.transaction(() => {
    const jobs = old.records<DeliveryJob>(DB.deliveryJobs);
    jobs.putSync('old', { id: 'old', channel: 'webhook', apiKey: API, target: 't', due: 0, attempt: 1, state: 'delivered', createdAt: 0, updatedAt: 10, payload: {} });
    jobs.putSync('live', { id: 'live', channel: 'webhook', apiKey: API, target: 't', due: 0, attempt: 0, state: 'pending', createdAt: 0, updatedAt: 0, payload: {} });
    old.records<number>(DB.meta).putSync('schemaVersion', 3);
  });
  await old.close();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  t.equal(await queue.prune(1_000), 0, 'before the build, the index knows nothing');
  t.equal(await queue.buildFinishedIndex(), 1, 'the finished row, not the pending one');
  t.equal(await queue.buildFinishedIndex(), 0, 'once');
  t.equal(await queue.prune(1_000), 1);
  t.same(queue.list().map((j) => j.id), ['live']);
});
