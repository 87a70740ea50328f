// Tests that the outbox, the delivery queue and jobs follow the worker role: nothing dispatched or sent without it, all of it resumed on taking it.
import t from 'tap';
import { DEFAULT_POLL_MS } from '../../src/delivery/dispatcher.js';
import type { WorkKind, WorkerRole } from '../../src/worker-role.js';
import { env } from '../http/comments-env.js';
import { startReceiver } from '../helpers/receiver.js';
import { threadBody } from './delivery-env.js';

/** A WorkerRole the test hands over and takes away, as the cluster's lease does (src/cluster/worker-lease.ts). */
class HandedRole implements WorkerRole {
  readonly processId = 'this-node';
  /** As in a cluster: the dispatcher keeps its short poll. */
  readonly wakesFollowRows = false;
  readonly wakes: WorkKind[] = [];
  private holding = false;
  private readonly changes: Array<(held: boolean) => void> = [];
  private readonly wakeListeners: Array<(kind: WorkKind) => void> = [];

  held(): boolean {
    return this.holding;
  }
  set(held: boolean): void {
    this.holding = held;
    for (const listener of this.changes) listener(held);
  }
  onChange(listener: (held: boolean) => void): void {
    this.changes.push(listener);
  }
  wake(kind: WorkKind): void {
    this.wakes.push(kind);
    for (const listener of this.wakeListeners) listener(kind);
  }
  onWake(listener: (kind: WorkKind) => void): void {
    this.wakeListeners.push(listener);
  }
  alive(processId: string): Promise<boolean> {
    return Promise.resolve(processId === this.processId);
  }
}

/** Waits for the job's committed state; the role's change starts it a few turns later (BackgroundWork.follow). */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
}

t.test('without the worker role nothing is dispatched, sent or run; taking it resumes everything from the rows; losing it stops sending', async (t) => {
  const receiver = await startReceiver(t);
  const role = new HandedRole();
  const { server, call, creds } = await env(t, { outboundAllowedNetworks: ['127.0.0.0/8'] }, { autoDeliver: false, workerRole: role });
  const { delivery, jobs } = server.server.services;
  t.equal(delivery.dispatcher.pollMs, DEFAULT_POLL_MS, 'a role whose wake-ups may overtake their rows (a cluster) keeps the short outbox poll');
  await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });

  await call('/v1/commentannotations/add', threadBody('while-not-held'));
  t.same(role.wakes, ['outbox'], 'the commit woke the worker (wherever it runs)');
  t.equal(await delivery.dispatcher.drain(), 0, 'the dispatcher claims nothing without the role');
  t.equal(await delivery.runner.drain(), 0, 'the runner sends nothing without the role');
  t.equal(receiver.requests.length, 0);

  // A job submitted here (a GDPR erase) is recorded and the worker woken; it does not run here.
  await call('/v2/users/add', { organizationId: 'org1', users: [{ userId: 'gone', name: 'Gone', email: 'gone@example.com' }] });
  const erase = await server.api.call(creds, '/v1/users/data/delete', { userId: 'gone' });
  t.equal(erase.status, 202);
  const jobId = (erase.body as unknown as { data: { jobId: string } }).data.jobId;
  t.same(role.wakes, ['outbox', 'jobs'], 'submitting woke the worker');
  await jobs.idle();
  t.equal(jobs.get(creds.apiKey, jobId).status, 'pending', 'the job stays pending: this node does not hold the role');

  // Taking the role: the pending job runs, the dispatcher plans the event written earlier, the runner sends it.
  role.set(true);
  await until(() => jobs.get(creds.apiKey, jobId).status === 'completed');
  t.pass('the job ran once the role was taken');
  await delivery.dispatcher.drain();
  await delivery.runner.drain();
  const [sent] = await receiver.waitFor(1);
  t.match(sent?.body, /while-not-held/, 'the event written before the role was taken is delivered once it is');

  // Losing the role: an event planned while held is not sent after the loss.
  await call('/v1/commentannotations/add', threadBody('planned-then-lost'));
  await delivery.dispatcher.drain();
  role.set(false);
  t.equal(await delivery.runner.drain(), 0, 'nothing is sent after the role was lost');
  t.equal(receiver.requests.length, 1);
  t.equal(delivery.queue.list((job) => job.state === 'pending').length, 1, 'the planned delivery waits, pending, for the next holder');
});
