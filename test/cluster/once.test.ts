// Tests once-only background work in a three-process cluster: each webhook sent once and each email under one Message-ID by one node, jobs run by the worker, take-over after SIGKILL.
import t from 'tap';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { startReceiver, type Received } from '../helpers/receiver.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { holdsWorker as holds, nodeEnv, until } from '../helpers/cluster.js';

const annotationOf = (request: Received): string =>
  (JSON.parse(request.body) as { data: { commentAnnotation: { annotationId: string } } }).data.commentAnnotation.annotationId;

/** A thread mentioning Bob: one advanced webhook and one email (to Bob) per thread. */
const thread = (documentId: string, annotationId: string): unknown => ({
  organizationId: 'org',
  documentId,
  commentAnnotations: [
    {
      annotationId,
      commentData: [{ commentText: `about ${annotationId}, @bob`, from: { userId: 'alice', name: 'Alice', email: 'alice@example.com' }, taggedUserContacts: [{ text: '@bob', userId: 'bob', contact: { email: 'bob@example.com', name: 'Bob', userId: 'bob' } }] }],
    },
  ],
});

t.test('three nodes: every event is delivered exactly once by the worker; SIGKILL the worker and another takes over', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const receiver = await startReceiver(t);
  const sink = await startSmtpSink(t);
  const dataDir = t.testdir();
  const env = (nodeId: string): Record<string, string> => nodeEnv(dataDir, nats.url, nodeId, { SMTP_URL: sink.url });
  const nodes: ServerProcess[] = [];
  for (const id of ['o1', 'o2', 'o3']) nodes.push(await startServerProcess(t, env(id)));
  t.equal(nodes.filter(holds).length, 1, 'exactly one node holds the worker role');
  const worker = nodes.find(holds) as ServerProcess;
  const others = nodes.filter((node) => node !== worker);
  const apis = nodes.map((node) => new ApiClient(`http://127.0.0.1:${node.port}`));
  const otherApis = others.map((node) => new ApiClient(`http://127.0.0.1:${node.port}`));
  const first = apis[0] as ApiClient;
  const credentials: Credentials = await first.createWorkspace();
  await first.call(credentials, '/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  await first.call(credentials, '/v2/workspace/emailconfig/update', { useEmailService: true });
  const endpoint = await first.call<{ id: string }>(credentials, '/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` });
  const endpointId = endpoint.body.result?.data.id ?? '';
  t.ok(endpointId.startsWith('ep_'), 'an endpoint on the loopback receiver');

  // N events written through every node, on documents each node comes to own (or forwards to their owner).
  const N = 12;
  for (let i = 0; i < N; i++) {
    const api = apis[i % apis.length] as ApiClient;
    const added = await api.call(credentials, '/v2/commentannotations/add', thread(`doc-${i % 4}`, `before-${i}`));
    t.equal(added.status, 200, `event ${i} acknowledged by node ${i % apis.length}`);
  }
  const firstWave = await receiver.waitFor(N);
  t.same(new Set(firstWave.map(annotationOf)).size, N, 'every event of the first wave arrived');

  // A job submitted on a node that is not the worker is run by the worker (the submitting node only records it).
  await first.call(credentials, '/v2/users/add', { organizationId: 'org', users: [{ userId: 'gone', name: 'Gone', email: 'gone@example.com' }] });
  const otherApi = otherApis[0] as ApiClient;
  const erase = await otherApi.call(credentials, '/v1/users/data/delete', { userId: 'gone' });
  t.equal(erase.status, 202, 'an erase job was accepted by a node that does not hold the worker role');
  const jobId = (erase.body as unknown as { data: { jobId: string } }).data.jobId;
  const status = await until(
    async () => (await otherApi.call<{ status: string; erased: Record<string, number> }>(credentials, '/v2/users/data/delete/status', { jobId })).body.result?.data,
    (data) => data?.status === 'completed' || data?.status === 'failed',
  );
  t.equal(status?.status, 'completed', 'the worker ran it');
  t.equal(status?.erased['directory'], 1, 'and it erased the user once');

  // Kill the worker while idle: a survivor takes the role within the lease time and delivers what comes next. Idle
  // includes the first wave's mails, which go out after its webhooks (a kill between them found mails in flight).
  const mailsToBob = (): typeof sink.mails => sink.mails.filter((mail) => mail.envelopeTo.includes('bob@example.com'));
  await until(() => Promise.resolve(mailsToBob().length), (count) => count >= N);
  worker.child.kill('SIGKILL');
  await worker.exited;
  const M = 6;
  for (let i = 0; i < M; i++) {
    const api = otherApis[i % otherApis.length] as ApiClient;
    const added = await api.call(credentials, '/v2/commentannotations/add', thread(`after-${i % 3}`, `after-${i}`));
    t.equal(added.status, 200, `event ${N + i} acknowledged after the kill`);
  }
  const all = await receiver.waitFor(N + M);
  t.equal(others.filter(holds).length, 1, 'exactly one survivor holds the worker role now');
  const ids = all.map((request) => String(request.headers['webhook-id']));
  t.equal(new Set(ids).size, ids.length, 'no webhook-id was sent twice');
  t.same(
    all.map(annotationOf).sort(),
    [...Array.from({ length: N }, (_, i) => `before-${i}`), ...Array.from({ length: M }, (_, i) => `after-${i}`)].sort(),
    'each event delivered exactly once, before and after the take-over',
  );
  // Each message records exactly one attempt: no second node attempted it (a duplicate would add an attempt). The
  // receiver sees a request before the worker has committed its attempt row (and before another node's applier has
  // it), so each read waits for the row to be there first.
  const survivor = otherApis[0] as ApiClient;
  for (const id of ids) {
    const attempts = await until(
      async () => (await survivor.call<{ status: string; attempts: unknown[] }>(credentials, '/v2/workspace/advancedwebhook/endpoints/messages/attempts/get', { endpointId, messageId: id })).body.result?.data.attempts.length ?? 0,
      (count) => count > 0,
    );
    t.equal(attempts, 1, `one attempt for ${id}`);
  }
  t.equal(receiver.requests.length, N + M, 'and nothing more arrived meanwhile');
  // Email through a real SMTP sink: one mail to Bob per thread, each with its own Message-ID. A mail the sink took
  // just before the kill whose send the worker had not recorded yet is sent again by the survivor, with the same
  // Message-ID (docs/cluster.md, "Failure cases"): the same message twice, never two messages for one thread.
  const messageIdOf = (mail: (typeof sink.mails)[number]): string => String(mail.parsed.messageId);
  const toBob = await until(() => Promise.resolve(mailsToBob()), (mails) => new Set(mails.map(messageIdOf)).size >= N + M);
  const aboutOf = (mail: (typeof sink.mails)[number]): string => /about ([a-z]+-\d+)/.exec(mail.parsed.text ?? '')?.[1] ?? '?';
  const threadsById = new Map<string, Set<string>>();
  for (const mail of toBob) threadsById.set(messageIdOf(mail), (threadsById.get(messageIdOf(mail)) ?? new Set()).add(aboutOf(mail)));
  t.equal(threadsById.size, N + M, 'one Message-ID per thread');
  t.same([...threadsById.values()].map((threads) => [...threads]).flat().sort(), all.map(annotationOf).sort(), 'each thread mailed to Bob, under one Message-ID of its own');
  const sentTwice = [...threadsById.keys()].filter((id) => toBob.filter((mail) => messageIdOf(mail) === id).length > 1).flatMap((id) => [...(threadsById.get(id) ?? [])]);
  t.ok(
    sentTwice.every((about) => about.startsWith('before-')),
    `only a mail of the wave before the kill can come twice (sent twice: ${sentTwice.join(', ') || 'none'}); the survivor's own sends come once`,
  );
  for (const node of others) node.child.kill('SIGTERM');
  for (const node of others) t.equal(await node.exited, 0, 'a survivor stopped cleanly');
});
