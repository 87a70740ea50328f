// Tests that endpoints never delivered to cannot hold the runner's working slots: real server, real HTTP receivers, one of which never answers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { startReceiver } from '../helpers/receiver.js';
import { deliveryEnv } from './delivery-env.js';

/** A real HTTP endpoint that reads each request and never answers (a black-holed target that accepts). */
async function hangingReceiver(t: Test): Promise<{ url: string; readonly firstEnded: Promise<void>; received: number; ended: number; close(): Promise<void> }> {
  let endedOne: () => void = () => undefined;
  const state = { url: '', received: 0, ended: 0, firstEnded: new Promise<void>((resolve) => (endedOne = resolve)) };
  const server = createServer((req, res) => {
    // An attempt given up by the sender (its deadline) closes the exchange: the first such is what the test races.
    res.on('close', () => {
      state.ended++;
      endedOne();
    });
    req.resume();
    req.on('end', () => void state.received++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = (): Promise<void> => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  t.teardown(() => (server.listening ? close() : undefined));
  return Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close });
}

/** Waits, a turn at a time, until `ready` holds. */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await new Promise<void>((resolve) => setImmediate(resolve));
}

const comment = (annotationId: string) => ({ organizationId: 'org1', documentId: 'doc1', commentAnnotations: [{ annotationId, commentData: [{ commentText: annotationId, from: { userId: 'u1' } }] }] });

t.test('a workspace that has delivered before gets its webhook while sixteen fresh workspaces\' 256 endpoints that never answer have their first attempts out', async (t) => {
  const alive = await startReceiver(t);
  const dead = await hangingReceiver(t);
  const env = await deliveryEnv(t);
  const { delivery } = env.running.services;
  await env.call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  await env.call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${alive.url}/hook` });
  t.equal((await env.call('/v1/commentannotations/add', comment('before'))).status, 200);
  await env.pump();
  await alive.waitFor(1);
  // Sixteen workspaces (workspace/create is cheap) with sixteen new endpoints each that never answer, one comment each.
  for (let k = 0; k < 16; k++) {
    const creds = await env.server.api.createWorkspace();
    const call = (path: string, data: unknown) => env.server.api.call(creds, path, data);
    await call('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
    for (let e = 0; e < 16; e++) await call('/v2/workspace/advancedwebhook/endpoints/create', { url: `${dead.url}/dead-${k}-${e}` });
    await call('/v1/commentannotations/add', comment(`dead-${k}`));
  }
  await delivery.dispatcher.drain();
  // The scan starts its attempts before it returns; it resolves when they end (their deadline, or the teardown).
  const deadScan = delivery.runner.runDue();
  // Beside them the sixteen owner-verification emails, which are sent at once: wait until only the hanging ones are left.
  await until(() => delivery.runner.busy === dead.received);
  const out = dead.received;
  t.ok(out > 0, `${out} attempts to the endpoints that never answer are out`);
  t.equal(dead.ended, 0, 'and hang');

  t.equal((await env.call('/v1/commentannotations/add', comment('during'))).status, 200);
  await delivery.dispatcher.drain();
  const scan = delivery.runner.runDue();
  const first = await Promise.race([alive.waitFor(2).then(() => 'delivered'), dead.firstEnded.then(() => 'an attempt that hung ended first')]);
  t.equal(first, 'delivered', 'the webhook arrived while every attempt that hangs was still out (it used to wait for their 15 s deadline)');
  t.equal(dead.ended, 0);
  t.ok(delivery.runner.occupancy().unprovenInFlight > 0, 'the unproven endpoints\' attempts held their own slots meanwhile');
  t.ok(out <= 64, `at most 64 of them at once (${out}), where they took all 256 working slots`);
  // Closed, the hanging receiver fails its attempts at once, and the scans end.
  await dead.close();
  await Promise.all([deadScan, scan]);
});
