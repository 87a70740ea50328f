// Tests the graceful stop of src/server.ts: requests queued in a mailbox or committing finish and are kept, requests after it are refused with 503.
import t from 'tap';
import { apiKeyHeaders } from '../helpers/api.js';
import { openSocket, response } from '../helpers/raw-http.js';
import { startTestServer } from '../helpers/server.js';

const scope = { organizationId: 'org-stop', documentId: 'doc-stop' };
const thread = (annotationId: string): unknown => ({ annotationId, commentData: [{ commentText: 'kept?', from: { userId: 'u1' } }] });

t.test('stop() while 60 adds wait in the document mailbox: each is answered 200 and kept after a restart', async (t) => {
  const dataDir = t.testdir();
  const { server, api } = await startTestServer(t, {}, dataDir);
  const creds = await api.createWorkspace();
  const key = { apiKey: creds.apiKey, organizationId: scope.organizationId, documentId: scope.documentId };
  // The document's mailbox is held on one task, so every add that arrives queues behind it; the test sees each
  // add reach the mailbox by counting the actor's run() calls.
  const lease = await server.services.documentActors.acquire(key);
  let unblock = (): void => undefined;
  const held = lease.actor.run(() => new Promise<void>((resolve) => (unblock = resolve)));
  const count = 60;
  const allQueued = new Promise<void>((resolve) => {
    const run = lease.actor.run.bind(lease.actor);
    let queued = 0;
    lease.actor.run = (task) => {
      const result = run(task);
      if (++queued === count) resolve();
      return result;
    };
  });
  const outcomes = Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await api.call(creds, '/v1/commentannotations/add', { ...scope, commentAnnotations: [thread(`a${i}`)] });
      return { id: `a${i}`, status: res.status, error: res.body.error?.status };
    }),
  );
  await allQueued;
  // Every add is admitted and queued: the stop begins now, and only then does the mailbox move; each add then
  // goes through the group commit while the stop drains.
  const stopping = server.stop();
  // A new connection is refused once the listen socket is closed: the stop has begun its drain, the adds still queued.
  await t.rejects(openSocket(server.port), { code: 'ECONNREFUSED' }, 'new connections are refused once the stop began');
  unblock();
  lease.release();
  const answered = await outcomes;
  await Promise.all([held, stopping]);
  t.same(answered.filter((o) => o.status !== 200), [], 'every add queued before the stop is answered 200: no refusal, no reset');

  const again = await startTestServer(t, {}, dataDir);
  const stored = new Set<string>();
  const ids = answered.map((o) => o.id);
  for (let i = 0; i < ids.length; i += 30) {
    const res = await again.api.call<Array<{ annotationId: string } | null>>(creds, '/v1/commentannotations/get', { ...scope, annotationIds: ids.slice(i, i + 30) });
    for (const row of res.body.result?.data ?? []) if (row !== null) stored.add(row.annotationId);
  }
  t.same(ids.filter((id) => !stored.has(id)), [], 'every answered add survived the stop');
});



t.test('during the stop, a new request on an open connection gets 503 while the one in flight completes', async (t) => {
  const { server, api } = await startTestServer(t);
  const creds = await api.createWorkspace();
  const headers = Object.entries({ ...apiKeyHeaders(creds), 'content-type': 'application/json' })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const request = (body: string, sent = body.length): string =>
    `POST /v1/commentannotations/add HTTP/1.1\r\nhost: x\r\n${headers}content-length: ${body.length}\r\n\r\n${body.slice(0, sent)}`;

  // Two connections opened before the stop; the first has a request whose body is only half sent.
  const slow = await openSocket(server.port);
  const late = await openSocket(server.port);
  t.teardown(() => {
    slow.destroy();
    late.destroy();
  });
  const warm = response(late);
  late.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
  t.equal((await warm).status, 200, 'the second connection is accepted and kept alive');
  const body = JSON.stringify({ data: { ...scope, commentAnnotations: [thread('in-flight')] } });
  const slowAnswer = response(slow);
  slow.write(request(body, 20));
  // The half-sent request has reached its handler once the first bytes are in: prove it with a request after it.
  const probe = await api.call(creds, '/v2/presence/get', scope);
  t.equal(probe.status, 200);

  const stopping = server.stop();
  const lateAnswer = response(late);
  late.write(request(JSON.stringify({ data: { ...scope, commentAnnotations: [thread('too-late')] } })));
  const refused = await lateAnswer;
  t.equal(refused.status, 503, 'a request after the stop began is refused');
  t.match(JSON.parse(refused.body), { error: { status: 'UNAVAILABLE' } });

  slow.write(body.slice(20));
  const done = await slowAnswer;
  t.equal(done.status, 200, 'the request in flight completes against an open store');
  t.match(JSON.parse(done.body), { result: { data: { 'in-flight': { success: true } } } });
  await stopping;
});
