// Tests background jobs: run only by the worker role's holder, postponed (not failed) when a resource is unavailable, resumed later from the unfinished-jobs index.
import type { Database, Key } from 'lmdb';
import t, { type Test } from 'tap';
import { unavailable } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { limitRefusals } from '../../src/metrics/instruments.js';
import type { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { JOB_LIMITS, Jobs, type JobRecord } from '../../src/tenant/jobs.js';
import type { WorkKind } from '../../src/worker-role.js';
import { openStore } from '../helpers/store.js';

/** The jobs database as stored: rows and index entries. */
const jobsDb = (store: Store): Database<JobRecord | string | true, Key> => store.records<JobRecord | string | true>(DB.jobs);

/** The unfinished-jobs index ([0, jobId] -> apiKey), read as the worker's scan reads it. */
const indexOf = (store: Store): Array<[string, string]> =>
  Array.from(jobsDb(store).getRange({ start: [0], end: [1] }), ({ key, value }) => [String((key as Key[])[1]), String(value)]);

/** The per-key entries ([1, apiKey, jobId]) as stored: what a submit counts. */
const byKeyOf = (store: Store): Array<[string, string]> =>
  Array.from(jobsDb(store).getKeys({ start: [1], end: [2] }), (key) => [String((key as Key[])[1]), String((key as Key[])[2])]);

/** The rows of one API key (its [apiKey] range). */
const rowsOf = (store: Store, apiKey: string): number => jobsDb(store).getKeysCount({ start: [apiKey], end: [apiKey, KEY_END] });

/** A role whose holding a test switches. */
function switchableRole(held: boolean) {
  const wakes: WorkKind[] = [];
  return { wakes, holding: held, held(): boolean { return this.holding; }, wake: (kind: WorkKind) => void wakes.push(kind) };
}

/** A runner that waits for `release()` (a job caught in progress), and a count of its runs. */
function gatedRunner() {
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const state = { runs: 0, release: () => release() };
  const runner = async (): Promise<{ ok: true }> => {
    state.runs++;
    await gate;
    return { ok: true };
  };
  return { state, runner };
}

t.test('a job that meets UNAVAILABLE stays pending and runs again; one that fails otherwise is failed', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const jobs = new Jobs(store, createLogger('silent'));
  let calls = 0;
  jobs.register<{ n: number }, { calls: number }>('flaky', () => {
    calls++;
    if (calls === 1) return Promise.reject(unavailable('this document is served by another node; retry shortly'));
    return Promise.resolve({ calls });
  });
  jobs.register('broken', () => Promise.reject(new Error('bad params')));
  const flaky = await jobs.submit('ak', 'flaky', { n: 1 });
  await jobs.idle();
  t.equal(jobs.get('ak', flaky.jobId).status, 'pending', 'postponed, not failed');
  t.equal(await jobs.resume(), 1, 'the next scan starts it again');
  await jobs.idle();
  t.match(jobs.get('ak', flaky.jobId), { status: 'completed', result: { calls: 2 } });
  const broken = await jobs.submit('ak', 'broken', {});
  await jobs.idle();
  t.match(jobs.get('ak', broken.jobId), { status: 'failed', error: 'bad params' });
  t.equal(await jobs.resume(), 0, 'nothing left to resume');
});

t.test('a node without the worker role records a job and wakes the worker; it runs where the role is held', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const wakes: WorkKind[] = [];
  let held = false;
  const role = { held: () => held, wake: (kind: WorkKind) => void wakes.push(kind) };
  const jobs = new Jobs(store, createLogger('silent'), Date.now, role);
  let runs = 0;
  jobs.register('count', () => Promise.resolve(++runs));
  const job = await jobs.submit('ak', 'count', {});
  await jobs.idle();
  t.same([runs, wakes, jobs.get('ak', job.jobId).status], [0, ['jobs'], 'pending'], 'recorded and the worker woken, not run');
  t.equal(await jobs.resume(), 0, 'a scan without the role starts nothing');
  held = true;
  t.equal(await jobs.resume(), 1);
  t.equal(await jobs.resume(), 0, 'a second scan while it runs does not start it twice');
  await jobs.idle();
  t.same([runs, jobs.get('ak', job.jobId).status], [1, 'completed']);
});

t.test('unfinished jobs are in the index, finished ones are not; no [apiKey] range meets an entry', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const role = switchableRole(false);
  const jobs = new Jobs(store, createLogger('silent'), Date.now, role);
  const { state, runner } = gatedRunner();
  jobs.register('gated', runner);
  jobs.register('broken', () => Promise.reject(new Error('bad params')));
  const gated = await jobs.submit('ak', 'gated', {});
  const broken = await jobs.submit('ak', 'broken', {});
  t.same(indexOf(store).sort(), [[broken.jobId, 'ak'], [gated.jobId, 'ak']].sort(), 'both pending: both indexed, in the submit transaction');
  role.holding = true;
  t.equal(await jobs.resume(), 2, 'the scan reads the index and starts both');
  await until(() => jobs.get('ak', broken.jobId).status === 'failed' && jobs.get('ak', gated.jobId).status === 'in_progress');
  t.same(indexOf(store), [[gated.jobId, 'ak']], 'the failed job left the index; the one in progress stays');
  state.release();
  await jobs.idle();
  t.same([state.runs, jobs.get('ak', gated.jobId).status, indexOf(store)], [1, 'completed', []], 'completed: the index is empty');
  const byApiKey = Array.from(jobsDb(store).getRange({ start: ['ak'], end: ['ak', KEY_END] }), ({ value }) => value);
  t.same(byApiKey.map((value) => (typeof value === 'object' ? value.jobId : String(value))).sort(), [broken.jobId, gated.jobId].sort(), 'the [apiKey] range holds the two rows and no entry');
  t.equal(await jobs.resume(), 0, 'finished jobs are never read again by a scan');
});

/** Opens the store in `dir` again: an index-only scan finds the job `jobId` of 'ak', which runs once and leaves the index. */
async function resumesFromIndex(t: Test, dir: string, jobId: string, entryThere: string): Promise<void> {
  const store = openStore(dir);
  t.teardown(() => store.close());
  const jobs = new Jobs(store, createLogger('silent'));
  let runs = 0;
  jobs.register('count', () => Promise.resolve(++runs));
  t.same(indexOf(store), [[jobId, 'ak']], entryThere);
  t.equal(await jobs.resume(), 1, 'an index-only scan finds it');
  await jobs.idle();
  t.same([runs, jobs.get('ak', jobId).status, indexOf(store)], [1, 'completed', []]);
}

t.test('a job left unfinished resumes from the index after a restart', async (t) => {
  const dir = t.testdir();
  const first = openStore(dir);
  const before = new Jobs(first, createLogger('silent'), Date.now, switchableRole(false));
  before.register('count', () => Promise.resolve(0));
  const job = await before.submit('ak', 'count', {});
  await before.stop();
  await first.close();

  await resumesFromIndex(t, dir, job.jobId, 'the entry survived the restart');
});

t.test('a pending row without an index entry (an older data directory) is resumed by the full pass and indexed', async (t) => {
  const dir = t.testdir();
  const old = openStore(dir);
  const row: JobRecord = { jobId: 'old-job', apiKey: 'ak', kind: 'count', params: {}, status: 'pending', createdAt: 1, updatedAt: 1 };
  const done: JobRecord = { ...row, jobId: 'old-done', status: 'completed' };
  await old.transaction(() => {
    jobsDb(old).putSync(['ak', row.jobId], row);
    jobsDb(old).putSync(['ak', done.jobId], done);
  });
  t.same(indexOf(old), [], 'written as an older build wrote it: no entry');
  // Its kind has no runner in this process, so nothing it runs writes the entry: only the full pass can.
  const jobs = new Jobs(old, createLogger('silent'));
  t.equal(await jobs.resume(), 0, 'an index-only scan does not see it');
  t.equal(await jobs.resume({ full: true }), 1, 'the full pass meets the row (and tries to start it)');
  t.same(indexOf(old), [[row.jobId, 'ak']], 'the full pass wrote its entry, and none for the completed row');
  await jobs.stop();
  await old.close();

  await resumesFromIndex(t, dir, row.jobId, 'after the upgrade the entry is there');
});

t.test('an entry whose row is gone or finished is removed by the next scan, index-only or full', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const db = jobsDb(store);
  const finished: JobRecord = { jobId: 'finished', apiKey: 'ak', kind: 'count', params: {}, status: 'failed', createdAt: 1, updatedAt: 1, error: 'x' };
  const writeStale = () =>
    store.transaction(() => {
      db.putSync(['ak', finished.jobId], finished);
      db.putSync([0, finished.jobId], 'ak');
      db.putSync([0, 'gone'], 'ak');
    });
  await writeStale();
  const jobs = new Jobs(store, createLogger('silent'));
  let runs = 0;
  jobs.register('count', () => Promise.resolve(++runs));
  t.equal(indexOf(store).length, 2, 'two stale entries');
  t.equal(await jobs.resume(), 0, 'nothing to start');
  t.same([indexOf(store), runs], [[], 0], 'both removed, nothing run');
  t.equal(jobs.get('ak', finished.jobId).status, 'failed', 'the finished row is kept');
  await writeStale();
  t.equal(await jobs.resume({ full: true }), 0);
  t.same([indexOf(store), runs], [[], 0], 'the full pass removes them too');
});

/** Resolves once `ready()` holds, checking after each turn of the event loop (no timers). */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('jobs run at most JOB_LIMITS.running at once and JOB_LIMITS.perKey per API key, keys in turn; the rest wait pending', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const jobs = new Jobs(store, createLogger('silent'));
  const started: string[] = [];
  const release = new Map<string, () => void>();
  const running = new Map<string, number>();
  let most = 0;
  let mostOfBusy = 0;
  jobs.register<{ name: string; key: string }, { ok: true }>('gated', (job) =>
    new Promise((resolve) => {
      started.push(job.params.name);
      running.set(job.params.key, (running.get(job.params.key) ?? 0) + 1);
      most = Math.max(most, [...running.values()].reduce((a, b) => a + b, 0));
      mostOfBusy = Math.max(mostOfBusy, running.get('busy') ?? 0);
      release.set(job.params.name, () => {
        running.set(job.params.key, (running.get(job.params.key) ?? 1) - 1);
        resolve({ ok: true });
      });
    }),
  );
  const until = async (ready: () => boolean): Promise<void> => {
    while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  const submitted: JobRecord[] = [];
  for (let i = 1; i <= 5; i++) submitted.push(await jobs.submit('busy', 'gated', { name: `busy-${i}`, key: 'busy' }));
  await jobs.submit('quiet', 'gated', { name: 'quiet-1', key: 'quiet' });
  await jobs.submit('third', 'gated', { name: 'third-1', key: 'third' });
  await until(() => started.length === JOB_LIMITS.running);
  t.same(started, ['busy-1', 'busy-2', 'quiet-1', 'third-1'], 'the busy key runs its 2; the keys behind its backlog start beside it');
  t.equal(jobs.queued, 3);
  t.equal(jobs.get('busy', submitted[2]?.jobId ?? '').status, 'pending', 'a waiting job is still pending in its row');
  release.get('busy-1')?.();
  await until(() => started.length === 5);
  t.equal(started[4], 'busy-3', 'a slot freed by the busy key goes to its next job');
  release.get('quiet-1')?.();
  await jobs.submit('quiet', 'gated', { name: 'quiet-2', key: 'quiet' });
  await until(() => started.length === 6);
  t.equal(started[5], 'quiet-2', 'the busy key at its limit is passed over');
  // Let everything finish, releasing each job as it starts.
  while (started.length < 8 || release.size > 0) {
    for (const [name, go] of [...release]) {
      release.delete(name);
      go();
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await jobs.idle();
  t.equal(started.length, 8, 'every job ran once');
  t.equal(most, JOB_LIMITS.running, 'never more than the limit at once');
  t.equal(mostOfBusy, JOB_LIMITS.perKey, 'never more than the per-key limit of one key');
  t.same(submitted.map((job) => jobs.get('busy', job.jobId).status), ['completed', 'completed', 'completed', 'completed', 'completed']);
});

t.test('past maxPendingPerKey unfinished jobs of a key submit refuses, counted from the rows; finished jobs free places', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const role = switchableRole(false);
  const jobs = new Jobs(store, createLogger('silent'), Date.now, role, 3);
  const { state, runner } = gatedRunner();
  jobs.register('gated', runner);
  const before = limitRefusals.pending_jobs_per_key;
  for (let i = 1; i <= 3; i++) await jobs.submit('ak', 'gated', { n: i });
  await t.rejects(jobs.submit('ak', 'gated', { n: 4 }), { status: 'RESOURCE_EXHAUSTED', retryAfterSeconds: 5, message: /MAX_PENDING_JOBS_PER_KEY/ }, 'the fourth is refused');
  t.equal(rowsOf(store, 'ak'), 3, 'nothing recorded for it');
  t.equal(limitRefusals.pending_jobs_per_key, before + 1, 'counted');
  t.ok(await jobs.submit('other', 'gated', { n: 1 }), "another key's job is recorded");
  // Another process on the same rows (a cluster node's copy, or the next start) counts the same jobs: none is in its queue.
  const elsewhere = new Jobs(store, createLogger('silent'), Date.now, switchableRole(false), 3);
  await t.rejects(elsewhere.submit('ak', 'gated', { n: 5 }), { status: 'RESOURCE_EXHAUSTED', message: /MAX_PENDING_JOBS_PER_KEY/ }, 'a process that never queued them refuses too');

  role.holding = true;
  t.equal(await jobs.resume(), 4);
  await until(() => state.runs === 3);
  t.equal(jobs.queued, 1, 'two of ak run (JOB_LIMITS.perKey), one waits, other runs');
  await t.rejects(jobs.submit('ak', 'gated', { n: 6 }), { status: 'RESOURCE_EXHAUSTED', message: /MAX_PENDING_JOBS_PER_KEY/ }, 'running and waiting jobs both count');
  state.release();
  await jobs.idle();
  t.same(byKeyOf(store), [], 'finished jobs left the per-key entries');
  t.ok(await jobs.submit('ak', 'gated', { n: 7 }), 'with its jobs finished the key may submit again');
  await jobs.idle();
});

t.test('the same job still waiting for a slot answers a second submit; one already running does not', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const jobs = new Jobs(store, createLogger('silent'));
  const { state, runner } = gatedRunner();
  jobs.register('gated', runner);
  const u1 = await jobs.submit('ak', 'gated', { userId: 'u1' });
  await jobs.submit('ak', 'gated', { userId: 'u2' });
  const u3 = await jobs.submit('ak', 'gated', { userId: 'u3' });
  t.equal(jobs.queued, 1, 'u1 and u2 run, u3 waits');
  const again = await jobs.submit('ak', 'gated', { userId: 'u3' });
  t.equal(again.jobId, u3.jobId, 'the waiting job answers');
  t.same([jobs.queued, rowsOf(store, 'ak')], [1, 3], 'nothing new recorded or queued');
  t.not((await jobs.submit('other', 'gated', { userId: 'u3' })).jobId, u3.jobId, "another key's identical job is its own");
  const rerun = await jobs.submit('ak', 'gated', { userId: 'u1' });
  t.not(rerun.jobId, u1.jobId, 'a job already running may have passed what was written since: a new one');
  t.equal(rowsOf(store, 'ak'), 4);
  const [first, second] = await Promise.all([jobs.submit('burst', 'gated', { userId: 'u9' }), jobs.submit('burst', 'gated', { userId: 'u9' })]);
  t.equal(second.jobId, first.jobId, 'an identical submit while the first is being recorded answers with its job');
  t.equal(rowsOf(store, 'burst'), 1);
  state.release();
  await jobs.idle();
  t.equal(state.runs, 6, 'every recorded job ran once');
});

t.test('the full pass adds the per-key entry an unfinished row lacks and removes one whose job finished (an older build)', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const db = jobsDb(store);
  const pending: JobRecord = { jobId: 'pending', apiKey: 'ak', kind: 'count', params: {}, status: 'pending', createdAt: 1, updatedAt: 1 };
  const done: JobRecord = { ...pending, jobId: 'done', status: 'completed' };
  await store.transaction(() => {
    // As a build before the per-key entries leaves them: the pending job's [0] entry only, and the finished one's [1]
    // entry still there (it was submitted by a newer build).
    db.putSync(['ak', pending.jobId], pending);
    db.putSync([0, pending.jobId], 'ak');
    db.putSync(['ak', done.jobId], done);
    db.putSync([1, 'ak', done.jobId], true);
  });
  // No runner for 'count': nothing runs, so only the pass writes entries.
  const jobs = new Jobs(store, createLogger('silent'), Date.now, switchableRole(true), 1);
  await t.rejects(jobs.submit('ak', 'count', {}), { status: 'RESOURCE_EXHAUSTED', message: /MAX_PENDING_JOBS_PER_KEY/ }, 'before the pass the stale entry counts');
  t.equal(await jobs.resume({ full: true }), 1);
  t.same(byKeyOf(store), [['ak', pending.jobId]], 'the pending job has its entry, the finished one none');
  t.same(indexOf(store), [[pending.jobId, 'ak']], 'the [0] index is unchanged');
  await t.rejects(jobs.submit('ak', 'count', {}), { status: 'RESOURCE_EXHAUSTED', message: /MAX_PENDING_JOBS_PER_KEY/ }, 'the pending job counts');
  await jobs.stop();
});

t.test('progress a job records stays on its row through its later status changes, and its re-run reads it', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const jobs = new Jobs(store, createLogger('silent'));
  const seen: Array<string | undefined> = [];
  jobs.register('resumable', async (job) => {
    seen.push(jobs.get(job.apiKey, job.jobId).progress);
    if (seen.length > 1) return { done: true };
    await store.transaction(() => jobs.recordProgressInWrite(job, 'half'));
    // Postponed after recording progress: the record this run was given has none, and its save must not drop the row's.
    throw unavailable('this document is served by another node; retry shortly');
  });
  const job = await jobs.submit('ak', 'resumable', {});
  await jobs.idle();
  t.match(jobs.get('ak', job.jobId), { status: 'pending', progress: 'half' }, 'postponed with its progress');
  t.equal(await jobs.resume(), 1);
  await jobs.idle();
  t.same(seen, [undefined, 'half'], 'the re-run reads the progress the first run recorded');
  t.match(jobs.get('ak', job.jobId), { status: 'completed', result: { done: true } });
});
