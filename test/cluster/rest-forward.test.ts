// Tests REST forwarding in process: a forwarded request runs the owner's serve step exactly like a direct one, is never forwarded twice, and takes the key's rate limit once.
import { connect } from 'nats';
import t from 'tap';
import { RestForwarding } from '../../src/cluster/rest-forward.js';
import { createLogger } from '../../src/log.js';
import { apiKeyHeaders } from '../helpers/api.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes } from '../helpers/server.js';

const scope = { organizationId: 'org-fwd', documentId: 'doc-fwd' };
const ADD = '/v2/commentannotations/add';
const comment = (id: string): unknown => ({ ...scope, commentAnnotations: [{ annotationId: id, commentData: [{ commentText: id, from: { userId: 'u' } }] }] });
/** Requests per minute per API key on every node; the clock below stands still, so no token comes back during the test. */
const LIMIT = 5;

t.test('a forwarded request is served like a direct one, once', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const node = (nodeId: string) => ({ natsUrl: nats.url, nodeId, secretKey: 'e'.repeat(64), apiKeyRateLimitPerMinute: LIMIT });
  const frozen = Date.now();
  // The nodes do not tell each other their usage here (test/cluster/shared-limits.test.ts covers that): each node's
  // buckets show what it charged itself, so what a forwarded request takes, and where, can be counted.
  const [n1, n2] = await startClusterNodes(t, [node('f1'), node('f2')], t.testdir(), { clock: { now: () => frozen }, usageIntervalMs: 3_600_000 });
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();

  // A forwarding node of the test's own: what f2 sends when it finds the document owned by f1, sent by hand.
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const sender = new RestForwarding(nc, 'tester', createLogger('silent'));
  const forwarded = async (to: string, body: string, headers: Record<string, string>) => {
    const answer = await sender.forward(to, { path: ADD, headers: { 'content-type': 'application/json', ...headers }, body: new TextEncoder().encode(body), ip: '' });
    return { status: answer.httpStatus, body: answer.body, headers: answer.headers ?? {} };
  };

  // f1's budget for the key: LIMIT, spent only by requests f1 received itself.
  t.equal((await n1.api.call(credentials, ADD, comment('c0'))).status, 200, 'f1 takes the document'); // f1: 1 spent
  t.ok(n1.server.services.documentActors.peek({ apiKey: credentials.apiKey, ...scope }), 'f1 owns it');

  // Bad body: the same envelope naming the field, direct or forwarded.
  const badBody = JSON.stringify({ data: { ...scope, commentAnnotations: 'not a list' } });
  const direct = await n1.api.send(ADD, badBody, apiKeyHeaders(credentials)); // f1: 2 spent
  t.equal(direct.status, 400);
  t.match(direct.body.error?.message, /commentAnnotations/, 'the direct answer names the field');
  const viaNats = await forwarded('f1', badBody, apiKeyHeaders(credentials));
  t.same({ status: viaNats.status, body: viaNats.body }, { status: direct.status, body: direct.body }, 'the forwarded answer is the same');

  // Bad credentials: authenticated on the owner, the same refusal (a refused credential spends nothing).
  const wrongToken = { ...apiKeyHeaders(credentials), 'x-svc-auth-token': 'not-a-token' };
  const directAuth = await n1.api.send(ADD, JSON.stringify({ data: comment('c1') }), wrongToken);
  t.not(directAuth.status, 200);
  const viaNatsAuth = await forwarded('f1', JSON.stringify({ data: comment('c1') }), wrongToken);
  t.same({ status: viaNatsAuth.status, body: viaNatsAuth.body }, { status: directAuth.status, body: directAuth.body }, 'a bad token is refused the same way');
  const noKey = await forwarded('f1', JSON.stringify({ data: comment('c1') }), {});
  t.match(noKey.body, { error: { status: 'PERMISSION_DENIED', message: /x-svc-api-key/ } }, 'missing credentials are named');

  // Never forwarded twice: f2 does not own the document, and a forwarded request is answered there, not passed on.
  const twice = await forwarded('f2', JSON.stringify({ data: comment('c2') }), apiKeyHeaders(credentials));
  t.match(twice, { status: 503, body: { error: { status: 'UNAVAILABLE' } }, headers: { 'retry-after': '1' } }, 'f2 answers UNAVAILABLE with retry-after');

  // Counted once: LIMIT writes through f2 are all forwarded to f1 and all succeed, and take nothing of f1's budget.
  for (let i = 0; i < LIMIT; i++) t.equal((await n2.api.call(credentials, ADD, comment(`r${i}`))).status, 200, `write ${i} through f2`);
  t.equal((await n2.api.call(credentials, ADD, comment('r-over'))).status, 429, "f2's budget for the key is spent (one token per request it received)");
  // f1 has LIMIT - 2 left: exactly what its own direct requests took, none of the forwarded ones.
  for (let i = 0; i < LIMIT - 3; i++) t.equal((await n1.api.call(credentials, ADD, comment(`d${i}`))).status, 200, `direct write ${i} on f1`);
  const read = await n1.api.call<Array<{ annotationId: string }>>(credentials, '/v2/commentannotations/get', scope);
  t.equal(read.status, 200, 'the last request of the budget');
  t.equal((await n1.api.call(credentials, ADD, comment('d-over'))).status, 429, "f1's budget ends where its own requests spent it");
  const ids = (read.body.result?.data ?? []).map((annotation) => annotation.annotationId).sort();
  t.same(ids, ['c0', 'd0', 'd1', 'r0', 'r1', 'r2', 'r3', 'r4'], 'every acknowledged write is there, nothing refused was written');
});
