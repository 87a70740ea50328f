// Tests the outbox dispatcher's loop: woken by commits (a long poll is only the backstop), one loop, quiet after a stop.
import t, { type Test } from 'tap';
import { WORK_SCAN_MS } from '../../src/background-work.js';
import type { Planner } from '../../src/delivery/channel.js';
import { Dispatcher, ROUND_GAP_MS } from '../../src/delivery/dispatcher.js';
import { DeliveryQueue } from '../../src/delivery/queue.js';
import { Outbox } from '../../src/events/outbox.js';
import type { EventDraft } from '../../src/events/types.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { startReceiver } from '../helpers/receiver.js';
import { startTestServer } from '../helpers/server.js';
import { env } from '../http/comments-env.js';
import { threadBody } from './delivery-env.js';

/** Longer than any test here may take: a delivery that waited for this poll would time the test out. */
const HOUR = 3_600_000;

function draft(documentId: string): EventDraft {
  const metadata = { apiKey: 'key', organizationId: 'org', documentId, document: { documentId }, organization: { organizationId: 'org' } };
  return { type: 'comment.add', apiKey: 'key', organizationId: 'org', documentId, data: { metadata } };
}

/**
 * A store and its outbox for a dispatcher left to run on its own. The dispatcher's timers are unref'd (they must not
 * hold a stopping server up), so this process is kept alive until the test ends.
 */
function openAlive(t: Test): { store: Store; outbox: Outbox } {
  const alive = setInterval(() => undefined, 60_000);
  t.teardown(() => clearInterval(alive));
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  return { store, outbox: new Outbox(store) };
}

t.test('a wake-up during a round is kept: an event committed while the dispatcher plans is dispatched at once, not at the next poll', async (t) => {
  const { store, outbox } = openAlive(t);
  const planned: string[] = [];
  let secondPlanned: () => void = () => undefined;
  const second = new Promise<void>((resolve) => (secondPlanned = resolve));
  const lines: string[] = [];
  const dispatcher: Dispatcher = new Dispatcher({
    store,
    outbox,
    queue: new DeliveryQueue(store),
    planners: [
      {
        name: 'recorder',
        wants: () => true,
        plan: (tx, event) => {
          planned.push(event.documentId);
          if (event.documentId === 'first') {
            // Another write commits while this round plans: its row is there after the round's claim, and its commit
            // wakes the dispatcher mid-round.
            outbox.append(tx, draft('second'), Date.now());
            dispatcher.wake();
          }
          if (event.documentId === 'second') secondPlanned();
        },
      } satisfies Planner,
    ],
    clock: { now: () => Date.now() },
    log: createLogger('debug', {}, (line) => lines.push(line)),
    pollMs: HOUR,
  });
  await store.transaction((tx) => outbox.append(tx, draft('first'), Date.now()));
  dispatcher.start();
  await second;
  await dispatcher.stop();
  t.same(planned, ['first', 'second'], 'each event planned once, the second without waiting for the hour-long poll');
  t.same(outbox.read(), [], 'both acked');
  t.same(lines, [], 'nothing logged');
});

t.test('one process: the poll is the slow backstop, and a comment written over REST is delivered at once (its commit wakes the dispatcher)', async (t) => {
  const receiver = await startReceiver(t);
  const defaults = await env(t);
  t.equal(defaults.server.server.services.delivery.dispatcher.pollMs, WORK_SCAN_MS, 'a lone process polls the outbox only as often as the background scan');

  const { call } = await env(t, { outboundAllowedNetworks: ['127.0.0.0/8'] }, { dispatcherPollMs: HOUR });
  await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
  t.equal((await call('/v1/commentannotations/add', threadBody('woken'))).status, 200);
  const [sent] = await receiver.waitFor(1);
  t.match(sent?.body, /woken/, 'delivered with an hour-long poll: the commit woke the dispatcher');
});

t.test('a server stopped while its dispatcher is busy logs no error, and the restarted one delivers every event', async (t) => {
  const receiver = await startReceiver(t);
  const lines: string[] = [];
  const log = createLogger('warn', {}, (line) => lines.push(line));
  // The short poll of a cluster node: a round left running past the stop (a second timer loop beside the stopped one,
  // as a wake-up racing a round once made) would start during the restart and deliveries below, on the closed store.
  const first = await startTestServer(t, { outboundAllowedNetworks: ['127.0.0.0/8'] }, undefined, { log, dispatcherPollMs: 100 });
  const creds = await first.api.createWorkspace();
  await first.api.call(creds, '/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  await first.api.call(creds, '/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
  // Writes at once: every commit wakes the dispatcher, many while it is planning the ones before.
  const written = await Promise.all(Array.from({ length: 20 }, (_, i) => first.api.call(creds, '/v1/commentannotations/add', threadBody(`busy-${i}`))));
  t.ok(written.every((answer) => answer.status === 200), 'every write committed');
  first.server.services.delivery.dispatcher.wake();
  const restarted = await first.restart();

  // Events not dispatched before the stop stay in the outbox and go out after the restart.
  restarted.server.services.delivery.dispatcher.wake();
  const annotations = new Set<string>();
  for (let count = 1; annotations.size < 20; count++) {
    const requests = await receiver.waitFor(count);
    for (const match of requests[count - 1]?.body.matchAll(/busy-\d+/g) ?? []) annotations.add(match[0]);
  }
  t.equal(annotations.size, 20, 'every event was delivered, across the stop');
  t.same(lines.filter((line) => (JSON.parse(line) as { level: string }).level === 'error'), [], 'no error logged: nothing dispatched after the store closed');
});

t.test('the runner is woken after a round that wrote jobs, not after one that wrote none', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const outbox = new Outbox(store);
  const queue = new DeliveryQueue(store);
  let wakes = 0;
  queue.onEnqueue(() => wakes++);
  const dispatcher = new Dispatcher({
    store,
    outbox,
    queue,
    planners: [
      {
        name: 'jobs-for-wanted',
        wants: () => true,
        plan: (tx, event, now) => {
          if (event.documentId === 'wanted') queue.enqueue(tx, { id: `${event.id}:test`, channel: 'webhook', apiKey: 'key', target: 'test', due: now, createdAt: now, payload: {} });
        },
      } satisfies Planner,
    ],
    clock: { now: () => Date.now() },
    log: createLogger('warn', {}, () => undefined),
    pollMs: HOUR,
  });
  await store.transaction((tx) => outbox.append(tx, draft('ignored'), Date.now()));
  t.equal(await dispatcher.pump(), 1);
  t.equal(wakes, 0, 'nothing enqueued: the runner is left alone');
  await store.transaction((tx) => {
    outbox.append(tx, draft('ignored'), Date.now());
    outbox.append(tx, draft('wanted'), Date.now());
  });
  t.equal(await dispatcher.pump(), 2);
  t.equal(wakes, 1, 'a job enqueued: the runner is woken once, after the commit');
  t.equal(queue.pending().length, 1);
});

t.test('rounds woken one after another start ROUND_GAP_MS apart, and every event is planned once', async (t) => {
  const { store, outbox } = openAlive(t);
  const roundStarts: number[] = [];
  /** When the latest round began its pump (`mayRun` is asked first thing): planning may wait for a commit after it. */
  let pumpStarted = 0;
  const planned: string[] = [];
  let allPlanned: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (allPlanned = resolve));
  const COMMITS = 6;
  const dispatcher: Dispatcher = new Dispatcher({
    store,
    outbox,
    queue: new DeliveryQueue(store),
    planners: [{ name: 'recorder', wants: () => true, plan: (_tx, event) => void planned.push(event.documentId) } satisfies Planner],
    mayRun: () => {
      pumpStarted = performance.now();
      return true;
    },
    // The round's planning is wrapped once per round that has events: the time such a round started. Timed at its
    // pump, not here, since the planning transaction may wait behind the test's own commits.
    planning: (body) => {
      roundStarts.push(pumpStarted);
      const result = body();
      if (planned.length === COMMITS) allPlanned();
      return result;
    },
    clock: { now: () => Date.now() },
    log: createLogger('warn', {}, () => undefined),
    pollMs: HOUR,
  });
  dispatcher.start();
  // One commit after another, each waking the dispatcher as a REST write's commit does.
  for (let i = 0; i < COMMITS; i++) {
    await store.transaction((tx) => outbox.append(tx, draft(`d${i}`), Date.now()));
    dispatcher.wake();
  }
  await done;
  await dispatcher.stop();
  t.same([...planned].sort(), Array.from({ length: COMMITS }, (_, i) => `d${i}`).sort(), 'each event planned once');
  t.ok(roundStarts.length <= COMMITS, `${roundStarts.length} rounds for ${COMMITS} commits`);
  // Timers may fire up to a millisecond early (libuv rounds its clock): the gap is checked with that slack.
  for (let i = 1; i < roundStarts.length; i++) {
    const gap = (roundStarts[i] as number) - (roundStarts[i - 1] as number);
    t.ok(gap >= ROUND_GAP_MS - 1.5, `round ${i} started ${gap.toFixed(1)} ms after the one before (gap ${ROUND_GAP_MS} ms)`);
  }
});
