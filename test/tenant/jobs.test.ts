// Tests background jobs: run only by the worker role's holder, postponed (not failed) when a resource is unavailable, resumed later.
import t from 'tap';
import { unavailable } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { Jobs } from '../../src/tenant/jobs.js';
import type { WorkKind } from '../../src/worker-role.js';
import { openStore } from '../helpers/store.js';

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
  t.equal(jobs.resume(), 1, 'the next scan starts it again');
  await jobs.idle();
  t.match(jobs.get('ak', flaky.jobId), { status: 'completed', result: { calls: 2 } });
  const broken = await jobs.submit('ak', 'broken', {});
  await jobs.idle();
  t.match(jobs.get('ak', broken.jobId), { status: 'failed', error: 'bad params' });
  t.equal(jobs.resume(), 0, 'nothing left to resume');
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
  t.equal(jobs.resume(), 0, 'a scan without the role starts nothing');
  held = true;
  t.equal(jobs.resume(), 1);
  t.equal(jobs.resume(), 0, 'a second scan while it runs does not start it twice');
  await jobs.idle();
  t.same([runs, jobs.get('ak', job.jobId).status], [1, 'completed']);
});
