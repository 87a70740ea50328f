// Tests SIGKILL of an owner with no sync clients to resend anything: every acknowledged REST write is read on another node, and the killed node rebuilds its dirty cache at restart.
import t from 'tap';
import { ApiClient } from '../helpers/api.js';
import { nodeEnv } from '../helpers/cluster.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

t.test('SIGKILL the owner right after acknowledged REST writes: another node has them all; the killed node rebuilds at restart', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const env = (nodeId: string): Record<string, string> => nodeEnv(root, nats.url, nodeId);
  const k1 = await startServerProcess(t, env('w1'));
  const k2 = await startServerProcess(t, env('w2'));
  const url = (node: ServerProcess): string => `http://127.0.0.1:${node.port}`;
  const on1 = new ApiClient(url(k1));
  const on2 = new ApiClient(url(k2));
  const credentials = await on1.createWorkspace();
  const room = { organizationId: 'org', documentId: 'acked-then-killed', editorId: 'main' };
  const scope = { organizationId: room.organizationId, documentId: room.documentId };

  // Every write below is acknowledged by k1, the document's owner, and nothing else holds a copy of it.
  const comments: string[] = [];
  for (let i = 0; i < 10; i++) {
    const id = `c${i}`;
    const added = await on1.call(credentials, '/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: id, commentData: [{ commentText: id, from: { userId: 'u' } }] }] });
    if (added.status === 200) comments.push(id);
  }
  t.equal(comments.length, 10, 'ten comments acknowledged by the owner');
  t.equal((await on1.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'first' })).status, 200, 'a CRDT document added');
  t.equal((await on1.call(credentials, '/v2/crdt/update', { ...room, type: 'text', data: 'last acknowledged text' })).status, 200, 'a CRDT write acknowledged');
  const late = await on1.createWorkspace();
  k1.child.kill('SIGKILL');
  await k1.exited;

  // k2 takes the document once the lease lapses; until then its requests answer 503 at once (the owner is gone). The
  // lapse is the server's event, so the test polls the REST read (each turn a real request) with a bound.
  const deadline = Date.now() + 20_000;
  let text = await on2.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  while (text.status === 503 && Date.now() < deadline) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    text = await on2.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  }
  t.equal(text.status, 200, 'k2 serves the document after the lease lapsed');
  t.same(text.body.result?.data.map((record) => record.data), ['last acknowledged text'], 'the acknowledged CRDT write is there');
  const read = await on2.call<Array<{ annotationId: string }>>(credentials, '/v2/commentannotations/get', scope);
  t.same(read.body.result?.data.map((a) => a.annotationId).sort(), comments, 'every acknowledged comment is there');
  t.equal((await on2.call(late, '/v2/workspace/apikeyconfig/get', {})).status, 200, 'the workspace acknowledged just before the kill works on k2');

  // The killed node's cache is dirty: it is wiped and rebuilt from the stream before the node listens.
  const again = await startServerProcess(t, env('w1'));
  t.match(again.stdout(), /wiping it and rebuilding from the stream/, 'the restart says it rebuilds');
  const on1again = new ApiClient(url(again));
  t.equal((await on1again.call(late, '/v2/workspace/apikeyconfig/get', {})).status, 200, 'the rebuilt node knows the late workspace');
  const reread = await on1again.call<Array<{ annotationId: string }>>(credentials, '/v2/commentannotations/get', scope);
  t.same(reread.body.result?.data.map((a) => a.annotationId).sort(), comments, 'and reads every comment');
  again.child.kill('SIGTERM');
  k2.child.kill('SIGTERM');
  await Promise.all([again.exited, k2.exited]);
});
