// Tests the delivery runner's limits on a real store: a target whose attempts hang holds only its slots, wakes nobody, and one API key holds at most its share.
import t, { type Test } from 'tap';
import type { Key } from 'lmdb';
import { ManualClock } from '../../src/delivery/clock.js';
import { DeliveryQueue, type ChannelName, type DeliveryJob } from '../../src/delivery/queue.js';
import { ProvenTargets } from '../../src/delivery/proven-targets.js';
import { DeliveryRunner, type AttemptResult, type ChannelRunner } from '../../src/delivery/runner.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB, SCHEMA_VERSION } from '../../src/store/keys.js';

/**
 * Attempts on targets named `dead…` hang until released; the others succeed at once and are recorded. Jobs named
 * `proof…` succeed at once whatever their target and are not recorded: `prove` gives targets the successful attempt
 * that lets them use the working slots (an unproven target has one attempt in flight).
 */
function setup(t: Test, limits: { maxInFlight?: number; maxInFlightPerKey?: number; maxInFlightFailing?: number; maxInFlightUnproven?: number; maxInFlightUnprovenPerKey?: number } = {}) {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  const clock = new ManualClock(Date.UTC(2026, 10, 28));
  const hanging: Array<{ job: DeliveryJob; release: () => void; fail: () => void }> = [];
  const delivered: string[] = [];
  const channel: ChannelRunner = {
    retryDelaysMs: [60_000],
    attempt: (job) => {
      if (job.id.startsWith('proof')) return Promise.resolve({ ok: true });
      if (!job.target.startsWith('dead')) {
        delivered.push(job.id);
        return Promise.resolve({ ok: true });
      }
      return new Promise<AttemptResult>((resolve) => hanging.push({ job, release: () => resolve({ ok: true }), fail: () => resolve({ ok: false, error: 'timed out' }) }));
    },
  };
  const channels: Record<ChannelName, ChannelRunner> = { email: channel, webhook: channel, advancedWebhook: channel, notification: channel, account: channel };
  const runner = new DeliveryRunner({ queue, channels, clock, log: createLogger('silent'), proven: new ProvenTargets(store), ...limits });
  const enqueue = (jobs: ReadonlyArray<{ id: string; apiKey: string; target: string; due?: number }>): Promise<void> =>
    store.transaction((tx) => {
      for (const job of jobs) queue.enqueue(tx, { id: job.id, channel: 'webhook', apiKey: job.apiKey, target: job.target, due: job.due ?? clock.now(), createdAt: clock.now(), payload: null });
    });
  const prove = async (targets: ReadonlyArray<{ target: string; apiKey: string }>): Promise<void> => {
    await enqueue(targets.map(({ target, apiKey }) => ({ id: `proof-${target}`, apiKey, target, due: clock.now() - 1_000_000 })));
    await runner.drain();
  };
  return { store, queue, clock, runner, hanging, delivered, enqueue, prove };
}

/** Waits, a turn at a time, until `ready` holds (an attempt's settlement commits a few turns after it ends). */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
}

const range = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));

t.test('a backlog behind a target whose attempts hang: 8 in flight, the rest wait without a wake-up, another target runs', async (t) => {
  const { queue, clock, runner, hanging, delivered, enqueue, prove } = setup(t);
  await prove([{ target: 'dead:1', apiKey: 'k1' }, { target: 'alive:1', apiKey: 'k2' }]);
  await enqueue(range(500, (i) => ({ id: `dead-${i}`, apiKey: 'k1', target: 'dead:1', due: clock.now() - 500 + i })));
  await enqueue([{ id: 'other', apiKey: 'k2', target: 'alive:1' }]);
  // A scan resolves when its attempts settle: the hanging ones are released at the end.
  const scans = [runner.runDue()];
  t.equal(hanging.length, 8, 'the target holds its 8 slots');
  t.same(delivered, ['other'], 'another key\'s job behind the backlog ran in the same scan');
  t.equal(runner.nextDue(), undefined, 'the 492 due jobs held back wake nobody (they used to make the runner look again at once, for ever)');
  await enqueue([{ id: 'later', apiKey: 'k2', target: 'alive:1', due: clock.now() + 5_000 }]);
  t.equal(runner.nextDue(), clock.now() + 5_000, 'a job that can start is still woken for');
  t.equal(queue.due(clock.now(), 1000, new Set(hanging.map((h) => h.job.id))).length, 492, 'without limits the held-back jobs are all due');
  // One attempt ends: its slot goes to the earliest held-back job.
  hanging.shift()?.release();
  await until(() => runner.busy === 7);
  t.equal(runner.nextDue(), clock.now() - 492, 'with a slot free, the earliest held-back job is due');
  scans.push(runner.runDue());
  t.equal(hanging.length, 8);
  t.equal(hanging.at(-1)?.job.id, 'dead-8', 'the backlog runs in due order');
  for (const h of hanging.splice(0)) h.release();
  await Promise.all(scans);
});

t.test('one API key holds at most a sixteenth of the slots over all its targets; other keys start beside it', async (t) => {
  const { clock, runner, hanging, delivered, enqueue, prove } = setup(t);
  await prove([...range(5, (i) => ({ target: `dead:${i}`, apiKey: 'noisy' })), ...range(2, (i) => ({ target: `alive:${i}`, apiKey: 'quiet' }))]);
  // Five endpoints of one key that answered once and never since: 40 attempts would fit their targets, 256 the runner.
  await enqueue(range(100, (i) => ({ id: `dead-${i}`, apiKey: 'noisy', target: `dead:${i % 5}` })));
  await enqueue(range(20, (i) => ({ id: `quiet-${i}`, apiKey: 'quiet', target: `alive:${i % 2}` })));
  const scan = runner.runDue();
  t.equal(hanging.length, 16, 'the noisy key holds 16 of the 256');
  t.equal(delivered.length, 16, 'the other key\'s jobs started beside it, up to its own 16');
  await until(() => runner.busy === 16);
  t.equal(runner.nextDue(), clock.now(), 'the other key has room again: its 4 jobs left are due');
  const second = runner.runDue();
  t.equal(delivered.length, 20);
  await until(() => runner.busy === 16);
  t.equal(runner.nextDue(), undefined, 'the noisy key\'s held-back jobs wake nobody');
  for (const h of hanging.splice(0)) h.release();
  await Promise.all([scan, second]);
});

t.test('the limit per key is an option (a sixteenth of maxInFlight unless set)', async (t) => {
  const { runner, hanging, enqueue, prove } = setup(t, { maxInFlight: 10, maxInFlightPerKey: 3 });
  await prove(range(4, (i) => ({ target: `dead:${i}`, apiKey: 'noisy' })));
  await enqueue(range(20, (i) => ({ id: `dead-${i}`, apiKey: 'noisy', target: `dead:${i % 4}` })));
  const scan = runner.runDue();
  t.equal(hanging.length, 3);
  for (const h of hanging.splice(0)) h.release();
  await scan;
});

t.test('a target whose last attempt failed has one attempt in flight, in slots of their own: failing targets cannot take the working ones\' slots', async (t) => {
  const { runner, hanging, delivered, enqueue, prove } = setup(t, { maxInFlight: 8, maxInFlightFailing: 2, maxInFlightPerKey: 8 });
  const scans: Array<Promise<number>> = [];
  // Three endpoints of three keys that answered once and time out now. Until a first attempt fails nobody knows: each takes its 8 in turn.
  await prove([...[0, 1, 2].map((n) => ({ target: `dead:${n}`, apiKey: `k${n}` })), { target: 'dead-slow:1', apiKey: 'slow' }, ...range(2, (i) => ({ target: `alive:${i}`, apiKey: 'quiet' }))]);
  for (const n of [0, 1, 2]) {
    await enqueue(range(10, (i) => ({ id: `dead${n}-${i}`, apiKey: `k${n}`, target: `dead:${n}` })));
    scans.push(runner.runDue());
    t.equal(hanging.filter((h) => h.job.target === `dead:${n}`).length, 8, `dead:${n} takes the working slots before it has failed`);
    for (const h of hanging.splice(0)) h.fail();
    await until(() => runner.busy === 0);
  }
  t.equal(runner.occupancy().targetsFailing, 3, 'the three targets are failing');
  // Each has 2 jobs left due now: one attempt per target, in the 2 slots of the failing.
  scans.push(runner.runDue());
  t.equal(hanging.length, 2, 'two failing attempts in flight, their slots full');
  t.equal(new Set(hanging.map((h) => h.job.target)).size, 2, 'one per target');
  // Another key's working endpoint, and a proven endpoint not yet failing: the 8 working slots are theirs.
  await enqueue(range(8, (i) => ({ id: `alive-${i}`, apiKey: 'quiet', target: `alive:${i % 2}` })));
  scans.push(runner.runDue());
  t.equal(delivered.length, 8, 'the working endpoint\'s jobs all started beside the failing ones');
  await until(() => runner.busy === 2);
  await enqueue(range(8, (i) => ({ id: `slow-${i}`, apiKey: 'slow', target: 'dead-slow:1' })));
  scans.push(runner.runDue());
  t.equal(hanging.filter((h) => h.job.target === 'dead-slow:1').length, 8, 'a proven target not yet failing has its 8 working slots');
  // A failing target that answers again gets its 8 back.
  const probe = hanging.find((h) => h.job.target.startsWith('dead:'));
  hanging.splice(hanging.indexOf(probe!), 1);
  probe!.release();
  await until(() => runner.occupancy().targetsFailing === 2);
  t.pass(`${probe!.job.target} answered: it is no longer failing`);
  for (const h of hanging.splice(0)) h.release();
  await until(() => runner.busy === 0);
  await Promise.all(scans);
});

t.test('a target never delivered to has one attempt in flight, in slots of their own, a few per API key; its first success proves it, and the proof is stored', async (t) => {
  const { store, queue, runner, hanging, delivered, enqueue, prove } = setup(t, { maxInFlight: 8, maxInFlightPerKey: 8, maxInFlightUnproven: 4, maxInFlightUnprovenPerKey: 2 });
  await prove([{ target: 'alive:0', apiKey: 'quiet' }]);
  // Three keys with three new endpoints each that never answer, three jobs each: 27 attempts would fit the working slots' rules.
  for (const k of [0, 1, 2]) await enqueue(range(9, (i) => ({ id: `dead${k}-${i}`, apiKey: `k${k}`, target: `dead:${k}:${i % 3}` })));
  await enqueue(range(8, (i) => ({ id: `alive-${i}`, apiKey: 'quiet', target: 'alive:0' })));
  const scans = [runner.runDue()];
  t.equal(hanging.length, 4, 'the unproven targets hold their 4 slots, not the working ones');
  t.equal(new Set(hanging.map((h) => h.job.target)).size, 4, 'one attempt per unproven target');
  for (const k of [0, 1, 2]) t.ok(hanging.filter((h) => h.job.apiKey === `k${k}`).length <= 2, `k${k} holds at most 2 of them`);
  t.equal(runner.occupancy().unprovenInFlight, 4);
  t.equal(delivered.length, 8, 'a proven target\'s jobs all started beside them, in the working slots');
  // One of them answers: proven, its two other jobs take working slots at once.
  const first = hanging.shift()!;
  first.release();
  await until(() => runner.busy === 3 && queue.get(first.job.id)?.state === 'delivered');
  scans.push(runner.runDue());
  t.equal(hanging.filter((h) => h.job.target === first.job.target).length, 2, `${first.job.target} is proven: its 2 jobs left run together`);
  t.equal(runner.occupancy().unprovenInFlight, 4, 'and its unproven slot went to another new endpoint');
  // What a restart reads (nothing in memory): the proof was stored with the attempt's settlement.
  t.ok(new ProvenTargets(store).has(first.job.target), 'the proven target is proven after a restart');
  t.notOk(new ProvenTargets(store).has('dead:2:2'), 'one that never answered is not');
  for (const h of hanging.splice(0)) h.fail();
  await until(() => runner.busy === 0);
  await Promise.all(scans);
});

t.test('a freed unproven slot goes to the API key served longest ago, not to the earliest due: a new workspace is next in line however many keys fill them', async (t) => {
  const { clock, runner, hanging, enqueue } = setup(t, { maxInFlight: 8, maxInFlightPerKey: 8, maxInFlightUnproven: 4, maxInFlightUnprovenPerKey: 2 });
  // Four keys with four new endpoints each that never answer, due first: the 4 slots hold one of each key's in turn.
  for (const k of [0, 1, 2, 3]) await enqueue(range(4, (i) => ({ id: `dead${k}-${i}`, apiKey: `k${k}`, target: `dead:${k}:${i}`, due: clock.now() - 1000 + k })));
  const scans = [runner.runDue()];
  t.same(hanging.map((h) => h.job.apiKey).sort(), ['k0', 'k1', 'k2', 'k3'], 'one target of each key, not two of the first two');
  // A new workspace's endpoint, due after all of theirs; one slot frees (an attempt times out).
  await enqueue([{ id: 'fresh-0', apiKey: 'fresh', target: 'dead:fresh' }]);
  const ended = hanging.shift()!;
  ended.fail();
  await until(() => runner.busy === 3);
  scans.push(runner.runDue());
  t.equal(hanging.at(-1)?.job.id, 'fresh-0', `the new key's job took it, not ${ended.job.apiKey}'s next endpoint, due 1 s before`);
  for (const h of hanging.splice(0)) h.fail();
  await until(() => runner.busy === 0);
  await Promise.all(scans);
});

t.test('each target\'s earliest job heads the index as jobs are added, moved and settled', async (t) => {
  const { store, queue, clock, enqueue } = setup(t);
  const now = clock.now();
  await enqueue([{ id: 'a30', apiKey: 'k', target: 'T', due: now + 30 }, { id: 'a10', apiKey: 'k', target: 'T', due: now + 10 }, { id: 'b20', apiKey: 'k', target: 'U', due: now + 20 }]);
  const heads = (): string[] => Array.from(store.records<string>(DB.deliveryHeads).getKeys({})).map((key) => `${(key as [number, string])[1]}@${(key as [number, string])[0] - now}`);
  t.same(heads(), ['T@10', 'U@20']);
  t.equal(queue.nextDue(new Set()), now + 10);
  t.equal(queue.nextDue(new Set(['a10'])), now + 20, 'a job in flight is skipped: U\'s head is next');
  const a10 = queue.get('a10');
  if (a10 === undefined) throw new Error('a10 was enqueued');
  await queue.settle(a10, { kind: 'delivered' }, now);
  t.same(heads(), ['U@20', 'T@30'], 'T\'s head moved to its next job');
  const b20 = queue.get('b20');
  if (b20 === undefined) throw new Error('b20 was enqueued');
  await store.transaction((tx) => queue.replace(tx, { ...b20, due: now + 5 }));
  t.same(heads(), ['U@5', 'T@30'], 'a job moved earlier moves its head');
  await store.transaction((tx) => {
    const a30 = queue.get('a30');
    if (a30 !== undefined) queue.cancel(tx, a30, 'gone', now);
  });
  t.same(heads(), ['U@5'], 'a target with no pending job has no head');
  t.same(queue.due(now + 100, 10, new Set()).map((j) => j.id), ['b20']);
  t.same(queue.pending().map((j) => j.id), ['b20']);
});

t.test('inside one batched transaction, heads read once a target follow every add, move and removal as an unbatched one does', async (t) => {
  const run = async (batched: boolean): Promise<string[]> => {
    const { store, queue, clock } = setup(t);
    const now = clock.now();
    const job = (id: string, target: string, due: number): DeliveryJob => ({ id, channel: 'webhook', apiKey: 'k', target, due: now + due, attempt: 0, state: 'pending', createdAt: now, updatedAt: now, payload: null });
    await store.transaction((tx) => {
      const body = (): void => {
        queue.enqueue(tx, job('a30', 'T', 30));
        queue.enqueue(tx, job('a10', 'T', 10));
        queue.enqueue(tx, job('b20', 'U', 20));
        queue.replace(tx, { ...job('a10', 'T', 10), state: 'delivered' });
        queue.enqueue(tx, job('a40', 'T', 40));
        queue.replace(tx, job('b20', 'U', 50));
        queue.enqueue(tx, job('b25', 'U', 25));
        queue.remove(tx, 'a30');
        queue.enqueue(tx, job('a5', 'T', 5));
        queue.remove(tx, 'b25');
        queue.remove(tx, 'b20');
        queue.enqueue(tx, job('b60', 'U', 60));
      };
      if (batched) queue.batched(body);
      else body();
    });
    return Array.from(store.records<string>(DB.deliveryHeads).getKeys({})).map((key) => `${(key as [number, string])[1]}@${(key as [number, string])[0] - now}`);
  };
  const plain = await run(false);
  t.same(plain, ['T@5', 'U@60']);
  t.same(await run(true), plain);
});

t.test('pending jobs of some API keys are found through their targets\' heads, not by reading every key\'s backlog', async (t) => {
  const { queue, enqueue } = setup(t);
  await enqueue(range(300, (i) => ({ id: `a-${i}`, apiKey: 'busy', target: `dead:${i % 3}` })));
  await enqueue([{ id: 'b-1', apiKey: 'small', target: 'alive:small' }, { id: 'b-2', apiKey: 'small', target: 'email:small' }, { id: 'c-1', apiKey: 'other', target: 'alive:other' }]);
  t.same(queue.pending(new Set(['small'])).map((j) => j.id).sort(), ['b-1', 'b-2']);
  t.same(queue.pending(new Set(['small', 'other'])).map((j) => j.id).sort(), ['b-1', 'b-2', 'c-1']);
  t.equal(queue.pending(new Set(['busy'])).length, 300);
  t.equal(queue.pending().length, 303, 'without keys, every pending job');
  t.same(queue.pending(new Set(['nobody'])), []);
});

t.test('a schema-4 directory: its time index moves into the index by target once, and its jobs run', async (t) => {
  const dir = t.testdir();
  const due = Date.UTC(2026, 10, 28);
  const old = Store.open(dir);
  await old.transaction(() => {
    const jobs = old.records<DeliveryJob>(DB.deliveryJobs);
    const index = old.records<string>(DB.deliveryDue);
    for (const [id, state] of [['j1', 'pending'], ['j2', 'pending'], ['j3', 'delivered']] as const) {
      jobs.putSync(id, { id, channel: 'webhook', apiKey: 'k', target: 'alive:1', due, attempt: 0, state, createdAt: due, updatedAt: due, payload: null });
      index.putSync([due, id] as Key, 'alive:1');
    }
    old.records<number>(DB.meta).putSync('schemaVersion', 4);
  });
  await old.close();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  t.same(queue.due(due, 10, new Set()), [], 'before the move the old rows are not read');
  t.equal(await queue.buildTargetIndex(), 2, 'the two pending jobs (a stale row of a delivered one is dropped)');
  t.equal(await queue.buildTargetIndex(), 0, 'once');
  t.equal(Array.from(store.records<string>(DB.deliveryDue).getKeys({})).length, 0, 'the old index is gone');
  t.same(queue.due(due, 10, new Set()).map((j) => j.id), ['j1', 'j2']);
  t.equal(store.records<number>(DB.meta).get('schemaVersion'), SCHEMA_VERSION, 're-stamped: a build that reads only 4 now refuses it');
});

t.test('a rate-limited target waits in memory: a backlog costs its slots\' attempts, not an attempt and a write per job', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  const clock = new ManualClock(Date.UTC(2026, 10, 28));
  let slot = clock.now();
  let attempts = 0;
  const delivered: string[] = [];
  // One delivery a second, as an advanced webhook endpoint with `rateLimit: 1` answers.
  const limited: ChannelRunner = {
    retryDelaysMs: [60_000],
    attempt: (job) => {
      attempts++;
      if (clock.now() < slot) return Promise.resolve({ ok: 'later', at: slot });
      slot = clock.now() + 1000;
      delivered.push(job.id);
      return Promise.resolve({ ok: true });
    },
  };
  const channels: Record<ChannelName, ChannelRunner> = { email: limited, webhook: limited, advancedWebhook: limited, notification: limited, account: limited };
  // An endpoint that has answered before (a new one has one attempt in flight until one succeeds).
  const proven = new ProvenTargets();
  await store.transaction((tx) => proven.record(tx, 'adv:limited', clock.now()));
  const runner = new DeliveryRunner({ queue, channels, clock, log: createLogger('silent'), proven });
  const start = clock.now();
  await store.transaction((tx) => {
    for (let i = 0; i < 100; i++) queue.enqueue(tx, { id: `j-${String(i).padStart(3, '0')}`, channel: 'advancedWebhook', apiKey: 'k', target: 'adv:limited', due: start - 100 + i, createdAt: start, payload: null });
  });
  t.equal(await runner.drain(), 8, 'one look: the target\'s 8 slots, once');
  t.same(delivered, ['j-000']);
  t.equal(attempts, 8, 'the other 92 jobs were not tried');
  t.same(queue.get('j-001'), { ...queue.get('j-001'), due: start - 99, attempt: 0, state: 'pending' }, 'a job told to wait is left as it was: nothing written');
  t.equal(runner.nextDue(), start + 1000, 'the next wake-up is the end of the wait');
  clock.advance(1000);
  t.equal(await runner.drain(), 8);
  t.same(delivered, ['j-000', 'j-001'], 'the backlog goes in its order, one a second');
  t.equal(attempts, 16);
  t.equal(queue.counts().delivered, 2);
});
