// Tests background jobs on documents another node owns, on a real nats-server with two nodes: the worker forwards the job to the owner instead of waiting for it to unload the document.
import t from 'tap';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes } from '../helpers/server.js';

const scope = { organizationId: 'org-jobs', documentId: 'doc-jobs' };

t.test('a GDPR erase that meets a document loaded on another node runs there, and completes', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  // One unfinished job a key: the forwarded run must leave no count behind on either node.
  const node = (nodeId: string) => ({ natsUrl: nats.url, nodeId, secretKey: 'f'.repeat(64), maxPendingJobsPerKey: 1 });
  const [n1, n2] = await startClusterNodes(t, [node('j1'), node('j2')]);
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const worker = n1.server.services.workerRole.held() ? n1 : n2;
  const owner = worker === n1 ? n2 : n1;
  t.ok(worker.server.services.workerRole.held() && !owner.server.services.workerRole.held(), 'one node holds the worker role');
  const credentials = await worker.api.createWorkspace();
  const key = { apiKey: credentials.apiKey, ...scope };

  // The other node writes a comment of dora's: it takes the document's lease and keeps the actor loaded.
  const added = await owner.api.call(credentials, '/v2/commentannotations/add', {
    ...scope,
    commentAnnotations: [{ annotationId: 'by-dora', commentData: [{ commentText: 'dora wrote this', from: { userId: 'dora', name: 'Dora' } }] }],
  });
  t.equal(added.status, 200);
  t.ok(owner.server.services.documentActors.peek(key), 'the other node owns the document and has it loaded');

  const erase = await worker.api.call(credentials, '/v1/users/data/delete', { userId: 'dora' });
  t.equal(erase.status, 202);
  const jobId = (erase.body as unknown as { data: { jobId: string } }).data.jobId;
  // The worker started the job at submit; it settles once the owner answered.
  await worker.server.services.jobs.idle();
  const status = await worker.api.call<{ status: string; erased: Record<string, number> }>(credentials, '/v2/users/data/delete/status', { jobId });
  t.equal(status.body.result?.data.status, 'completed', 'the job completed without waiting for the document to unload');
  t.equal(status.body.result?.data.erased['comments'], 1, "dora's thread was erased");
  t.ok(owner.server.services.documentActors.peek(key), 'the owner still has the document loaded: the erase ran through its actor');
  t.notOk(worker.server.services.documentActors.peek(key), 'the worker never loaded it');

  const exported = await owner.api.call<{ comments: unknown[] }>(credentials, '/v2/users/data/get', { userId: 'dora' });
  t.same(exported.body.result?.data.comments, [], 'nothing of dora is left in the comments, on the owner');

  // The job is one row wherever it ran: once its completion reaches the owner's copy, neither node counts it.
  while (owner.server.services.jobs.get(credentials.apiKey, jobId).status !== 'completed') await new Promise<void>((resolve) => setImmediate(resolve));
  const next = await owner.api.call(credentials, '/v1/users/data/delete', { userId: 'otto' });
  t.equal(next.status, 202, 'a new erase submitted on the other node is recorded (MAX_PENDING_JOBS_PER_KEY 1)');
});
