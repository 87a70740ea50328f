// Tests API_KEY_SYNC_CPU_MS_PER_SECOND: each key pays for the event loop its frames took; a key past its share is shed, others go on.
import t from 'tap';
import { limitRefusals } from '../../src/metrics/instruments.js';
import { SyncCpuBudget } from '../../src/doc/sync-cpu.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, nextClose, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';

t.test('the budget: spent after the fact, into debt, refilled at its rate', async (t) => {
  let now = 0;
  const budget = new SyncCpuBudget(100, () => now);
  t.notOk(budget.exhausted('k'), 'a key starts with 2 seconds\' worth (200 ms)');
  budget.spend('k', 150);
  t.notOk(budget.exhausted('k'), '150 ms spent, 50 left');
  budget.spend('k', 1_000);
  t.ok(budget.exhausted('k'), 'a frame that took a second puts the key in debt');
  t.notOk(budget.exhausted('other'), 'another key has its own');
  now += 9_000;
  t.ok(budget.exhausted('k'), '950 ms of debt: 9 s of refill at 100 ms a second is not enough');
  now += 600;
  t.notOk(budget.exhausted('k'), 'paid back after 9.5 s');
  budget.spend('k', 1_000_000);
  now += 60_001;
  t.notOk(budget.exhausted('k'), 'the debt stops at a minute\'s worth (6,000 ms at 100 a second)');
});

t.test('a key past its share of the event loop has its socket closed with 1013; another key\'s edits go on', async (t) => {
  // 1 ms a second (bursts of 2 ms): a few hundred applied updates spend it.
  const { api, url } = await startTestServer(t, { apiKeySyncCpuMsPerSecond: 1, apiKeySyncMessagesPerSecond: 0 });
  const room: Room = { organizationId: 'org', documentId: 'doc', editorId: 'main' };
  const heavy = await api.createWorkspace();
  const light = await api.createWorkspace();
  const writer = connect(t, url, room, await userToken(api, heavy, [editorOf(room)]));
  const [other, otherReader] = await Promise.all([0, 1].map(async () => connect(t, url, room, await userToken(api, light, [editorOf(room)]))));
  await Promise.all([writer, other!, otherReader!].map(synced));
  const refusedBefore = limitRefusals.api_key_sync_cpu;

  const closed = nextClose(writer);
  for (let i = 0; i < 2_000; i++) writer.text.insert(0, String(i % 10));
  const close = await closed;
  t.equal(close.code, 1013, 'closed with 1013 (the stock client reconnects)');
  t.match(close.reason, /API_KEY_SYNC_CPU_MS_PER_SECOND/);
  t.ok(limitRefusals.api_key_sync_cpu > refusedBefore, 'counted (plait_limit_refusals_total{limit="api_key_sync_cpu"})');

  other!.text.insert(0, 'unaffected');
  await whenDocs([otherReader!.doc], () => otherReader!.text.toString() === 'unaffected');
  t.pass('another key\'s edit goes through while the first key waits out its debt');
});
