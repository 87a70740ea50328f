// Tests the graceful stop of src/server.ts: requests in flight finish and are kept, requests after it are refused with 503.
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { apiKeyHeaders } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';

const scope = { organizationId: 'org-stop', documentId: 'doc-stop' };
const thread = (annotationId: string): unknown => ({ annotationId, commentData: [{ commentText: 'kept?', from: { userId: 'u1' } }] });

t.test('stop() while 200 adds are in flight: each is answered 200 and kept, or refused; none fails with 500', async (t) => {
  const dataDir = t.testdir();
  const { server, api } = await startTestServer(t, {}, dataDir);
  const creds = await api.createWorkspace();
  let stopping: Promise<void> | undefined;
  // The 20th write handed to the group commit starts the stop: other requests are then connecting, streaming their
  // body, queued in the document's mailbox or waiting for their commit.
  const group = server.services.store.group;
  const submit = group.submit.bind(group);
  let submitted = 0;
  group.submit = (change) => {
    submit(change);
    if (++submitted === 20) stopping = server.stop();
  };
  const outcomes = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      try {
        const res = await api.call(creds, '/v1/commentannotations/add', { ...scope, commentAnnotations: [thread(`a${i}`)] });
        return { id: `a${i}`, status: res.status, error: res.body.error?.status };
      } catch (error) {
        // Connection refused or reset once the listen socket is closed: the request never reached an operation.
        return { id: `a${i}`, status: 0, error: String(error) };
      }
    }),
  );
  await stopping;
  const failed = outcomes.filter((o) => o.status !== 200 && o.status !== 503 && o.status !== 0);
  t.same(failed, [], 'every request was answered 200, refused with 503, or never got in');
  t.ok(outcomes.every((o) => o.status !== 503 || o.error === 'UNAVAILABLE'), '503 answers say UNAVAILABLE');
  const answered = outcomes.filter((o) => o.status === 200).map((o) => o.id);
  t.ok(answered.length >= 20, `requests in flight completed (${answered.length} answered 200)`);
  t.ok(stopping !== undefined, 'the stop began while requests were in flight');

  const again = await startTestServer(t, {}, dataDir);
  const stored = new Set<string>();
  for (let i = 0; i < answered.length; i += 30) {
    const res = await again.api.call<Array<{ annotationId: string } | null>>(creds, '/v1/commentannotations/get', { ...scope, annotationIds: answered.slice(i, i + 30) });
    for (const row of res.body.result?.data ?? []) if (row !== null) stored.add(row.annotationId);
  }
  t.same(answered.filter((id) => !stored.has(id)), [], 'every answered add survived the stop');
});

/** Reads one HTTP response (status line and body) from a keep-alive socket. */
function response(socket: Socket): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve({ status: Number(text.slice(9, 12)), body: text.slice(end + 4, end + 4 + length) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

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
