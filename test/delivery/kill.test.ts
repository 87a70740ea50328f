// Tests delivery across kill -9: pending deliveries resume at their scheduled time, acknowledged ones are never sent again.
import t from 'tap';
import { ApiClient, type Credentials } from '../helpers/api.js';
import { startServerProcess } from '../helpers/process.js';
import { startReceiver, type Received } from '../helpers/receiver.js';
import { threadBody } from './delivery-env.js';

interface Attempts {
  status: string;
  attempts: Array<{ timestamp: string; status: string }>;
}

/** Polls a REST read until `ready` holds: the server's committed state, not a timer, decides when the test goes on. */
async function until<T>(read: () => Promise<T>, ready: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (ready(value)) return value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

function annotationOf(request: Received): string {
  return (JSON.parse(request.body) as { data: { commentAnnotation: { annotationId: string } } }).data.commentAnnotation.annotationId;
}

t.test('kill -9 with deliveries pending: after restart they are made as scheduled, acknowledged ones never again', async (t) => {
  const receiver = await startReceiver(t);
  const failuresLeft: Record<string, number> = { pending: 2 };
  receiver.answer = (request) => {
    const annotationId = annotationOf(request);
    const left = failuresLeft[annotationId] ?? 0;
    if (left > 0) {
      failuresLeft[annotationId] = left - 1;
      return 500;
    }
    return 200;
  };
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, DEV_BOOTSTRAP: 'false', LOG_LEVEL: 'info', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' };
  const first = await startServerProcess(t, env);
  const api = new ApiClient(`http://127.0.0.1:${first.port}`);
  const creds: Credentials = await api.createWorkspace();
  await api.call(creds, '/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  const endpointId = (await api.call<{ id: string }>(creds, '/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook` })).body.result?.data.id ?? '';
  const attemptsOf = (client: ApiClient, messageId: string) => async (): Promise<Attempts | undefined> =>
    (await client.call<Attempts>(creds, '/v2/workspace/advancedwebhook/endpoints/messages/attempts/get', { endpointId, messageId })).body.result?.data;

  // One delivery acknowledged (and its success committed) before the kill.
  await api.call(creds, '/v1/commentannotations/add', threadBody('acked'));
  const [acked] = await receiver.waitFor(1);
  const ackedId = String(acked?.headers['webhook-id']);
  await until(attemptsOf(api, ackedId), (a) => a?.status === 'success');

  // One delivery failing twice (attempt 1 and the immediate retry), so its next attempt is due 5 s after the second.
  await api.call(creds, '/v1/commentannotations/add', threadBody('pending'));
  const failed = await receiver.waitFor(3);
  const pendingId = String(failed[2]?.headers['webhook-id']);
  const beforeKill = await until(attemptsOf(api, pendingId), (a) => a?.attempts.length === 2);
  const dueAt = Date.parse(beforeKill?.attempts[1]?.timestamp ?? '') + 5_000;

  // One event committed to the outbox just before the kill, perhaps not yet dispatched.
  await api.call(creds, '/v1/commentannotations/add', threadBody('late'));
  first.child.kill('SIGKILL');
  t.equal(await first.exited, 'SIGKILL');

  const second = await startServerProcess(t, env);
  const api2 = new ApiClient(`http://127.0.0.1:${second.port}`);
  // acked 1 + pending 3 + late at least 1: a resent acknowledged delivery would show up in the counts below.
  const settled = (requests: readonly Received[]): boolean =>
    requests.filter((r) => annotationOf(r) === 'pending').length >= 3 && requests.some((r) => annotationOf(r) === 'late');
  let all = receiver.requests.slice();
  while (!settled(all)) all = await receiver.waitFor(all.length + 1);
  const retried = all.filter((r) => annotationOf(r) === 'pending')[2];
  t.equal(retried?.headers['webhook-id'], pendingId, 'the pending message resumed under the same webhook-id');
  const after = await until(attemptsOf(api2, pendingId), (a) => a?.status === 'success');
  const third = Date.parse(after?.attempts[2]?.timestamp ?? '');
  t.ok(third >= dueAt, `the third attempt was not made before its due time (${third - dueAt} ms after it)`);
  t.equal(after?.attempts.length, 3, 'exactly three attempts: nothing repeated');
  t.equal(receiver.requests.filter((r) => r.headers['webhook-id'] === ackedId).length, 1, 'the acknowledged delivery was not sent again');
  // The late event may have been sent in the instant before the kill, its success not yet committed: delivery is at
  // least once, so the restarted server sends it again, under the same webhook-id (the receiver's deduplication key).
  const late = receiver.requests.filter((r) => annotationOf(r) === 'late');
  t.ok(late.length >= 1 && late.length <= 2, `the event left in the outbox was delivered (${late.length} sends)`);
  t.equal(new Set(late.map((r) => r.headers['webhook-id'])).size, 1, 'every send of the late event carries one webhook-id');
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0);
});
