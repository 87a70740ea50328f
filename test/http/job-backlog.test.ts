// Tests MAX_PENDING_JOBS_PER_KEY through HTTP: GDPR erasures and migrations past a key's unfinished jobs get 429 naming the limit, counted from the stored rows on a node that does not run them.
import t from 'tap';
import { LocalWorkerRole } from '../../src/worker-role.js';
import { startTestServer } from '../helpers/server.js';

const ORG = 'org-backlog';

/** A role this node does not hold until the test hands it over: jobs are recorded here and run only once it is held (a cluster's other nodes). */
class HandedRole extends LocalWorkerRole {
  private holding = false;
  private readonly changes: Array<(held: boolean) => void> = [];

  override held(): boolean {
    return this.holding;
  }
  take(): void {
    this.holding = true;
    for (const listener of this.changes) listener(true);
  }
  override onChange(listener: (held: boolean) => void): void {
    this.changes.push(listener);
  }
}

const refusals = async (url: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^plait_limit_refusals_total\{limit="pending_jobs_per_key"\} (\d+)/m.exec(text)?.[1] ?? 'NaN');
};

t.test('past MAX_PENDING_JOBS_PER_KEY unfinished jobs an erase or a migration gets 429 naming the limit; other keys pass; finished jobs free places', async (t) => {
  const role = new HandedRole();
  const { api, url, server } = await startTestServer(t, { maxPendingJobsPerKey: 2 }, undefined, { workerRole: role });
  const busy = await api.createWorkspace();
  const quiet = await api.createWorkspace();
  await api.call(busy, '/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f1' }] });
  await api.call(busy, '/v2/organizations/documents/add', { organizationId: ORG, folderId: 'f1', documents: [{ documentId: 'old-doc', documentName: 'Plan' }] });
  const before = await refusals(url);

  const erase = (credentials: typeof busy, userId: string) => api.call(credentials, '/v2/users/data/delete', { userId });
  const first = await erase(busy, 'u1');
  const second = await erase(busy, 'u2');
  t.same([first.status, second.status], [202, 202], 'two erasures recorded (this node does not run them: they stay pending)');
  const third = await erase(busy, 'u3');
  t.equal(third.status, 429, 'the third is refused');
  t.match(third.body, { error: { status: 'RESOURCE_EXHAUSTED', message: /MAX_PENDING_JOBS_PER_KEY/ } }, 'the envelope names the limit');
  t.equal(third.headers.get('retry-after'), '5', 'with Retry-After');
  const migrate = await api.call(busy, '/v2/organizations/documents/migrate', { organizationId: ORG, documentId: 'old-doc', newDocumentId: 'new-doc' });
  t.match([migrate.status, migrate.body], [429, { error: { status: 'RESOURCE_EXHAUSTED' } }], 'a migration counts against the same limit');
  t.equal((await erase(quiet, 'u1')).status, 202, "another key's erase is recorded");
  t.equal(await refusals(url), before + 2, 'both refusals counted in plait_limit_refusals_total{limit="pending_jobs_per_key"}');

  role.take();
  await server.services.jobs.resume();
  await server.services.jobs.idle();
  const firstId = (first.body as unknown as { data: { jobId: string } }).data.jobId;
  const status = await api.call<{ status: string }>(busy, '/v2/users/data/delete/status', { jobId: firstId });
  t.equal(status.body.result?.data.status, 'completed', 'the recorded jobs ran once the role was taken');
  t.equal((await erase(busy, 'u3')).status, 202, 'with its jobs finished the key may submit again');
});
