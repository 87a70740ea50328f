// Tests that deleting a document (alone, with its folder or with its organization) drops its pending crdt.update_data event.
import t, { type Test } from 'tap';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { deliveryEnv, type DeliveryEnv } from './delivery-env.js';

/** A server with advanced webhooks on for crdt events, and every crdt event the outbox ever held, by document. */
async function setUp(t: Test): Promise<{ env: DeliveryEnv; receiver: Receiver; written: Set<string> }> {
  const receiver = await startReceiver(t);
  const env = await deliveryEnv(t);
  const { call } = env;
  const ok = async (path: string, data: unknown): Promise<void> => {
    const res = await call(path, data);
    if (res.status !== 200) throw new Error(`${path}: ${JSON.stringify(res.error)}`);
  };
  await ok('/v2/workspace/advancedwebhookconfig/update', { isEnabled: true });
  await ok('/v2/workspace/advancedwebhook/endpoints/create', { url: `${receiver.url}/hook`, filterTypes: ['crdt.update_data'] });
  for (const organizationId of ['org-1', 'org-2']) {
    await ok('/v2/organizations/folders/add', { organizationId, folders: [{ folderId: 'f' }] });
    await ok('/v2/organizations/documents/add', { organizationId, documents: [{ documentId: 'doc-a' }, { documentId: 'doc-b' }] });
    await ok('/v2/organizations/documents/add', { organizationId, folderId: 'f', documents: [{ documentId: 'doc-f' }] });
  }
  // Looked at after every commit that raised events (the worker's wake-up), before anything could claim them.
  const { outbox } = env.running.services;
  const written = new Set<string>();
  outbox.onCommitted(() => {
    for (const event of outbox.read()) if (event.type === 'crdt.update_data') written.add(`${event.organizationId}/${event.documentId ?? ''}`);
  });
  return { env, receiver, written };
}

async function edit(env: DeliveryEnv, organizationId: string, documentId: string, operation: 'add' | 'update' = 'add'): Promise<void> {
  const res = await env.call(`/v2/crdt/${operation}`, { organizationId, documentId, editorId: 'main', type: 'text', data: `${operation} of ${documentId}` });
  if (res.status !== 200) throw new Error(`crdt/${operation}: ${JSON.stringify(res.error)}`);
}

/** Raises every pending event (past any wait), commits it and delivers it; answers the documents the receiver heard of. */
async function raiseAll(env: DeliveryEnv, receiver: Receiver, expected: number): Promise<string[]> {
  const events = env.running.services.crdtEvents;
  events.raiseDue(true);
  await events.settled();
  await env.pump();
  const heard = await receiver.waitFor(expected);
  return heard.map((request) => {
    const { metadata } = (JSON.parse(request.body) as { data: { metadata: { organizationId: string; documentId: string } } }).data;
    return `${metadata.organizationId}/${metadata.documentId}`;
  });
}

t.test('documents/delete and folders/delete drop the pending event of each deleted document; others still go', async (t) => {
  const { env, receiver, written } = await setUp(t);
  // Delivery woken by each commit, as a running server's worker is (src/services.ts): an event raised is sent at once.
  env.running.services.outbox.onCommitted(() => void env.pump());
  for (const documentId of ['doc-a', 'doc-b', 'doc-f']) await edit(env, 'org-1', documentId);
  t.equal(env.running.services.documentActors.loadedCount, 3, 'the edited documents are loaded, their events pending');

  t.equal((await env.call('/v2/organizations/documents/delete', { organizationId: 'org-1', documentIds: ['doc-a'] })).status, 200);
  t.equal((await env.call('/v2/organizations/folders/delete', { organizationId: 'org-1', folderId: 'f' })).status, 200);
  t.same([...written], [], 'the deletes raised nothing');
  t.equal(receiver.requests.length, 0, 'and sent nothing');

  t.same(await raiseAll(env, receiver, 1), ['org-1/doc-b'], 'past the wait: the event of the document left');
  t.same([...written], ['org-1/doc-b'], 'and no event of a deleted document was ever in the outbox');
  t.equal(receiver.requests.length, 1);
});

t.test('organizations/delete drops the pending events of its documents; another organization\'s still go', async (t) => {
  const { env, receiver, written } = await setUp(t);
  for (const organizationId of ['org-1', 'org-2']) for (const documentId of ['doc-a', 'doc-f']) await edit(env, organizationId, documentId);

  t.equal((await env.call('/v2/organizations/delete', { organizationIds: ['org-1'] })).status, 200);
  t.same([...written], [], 'the delete raised nothing');

  t.same((await raiseAll(env, receiver, 2)).sort(), ['org-2/doc-a', 'org-2/doc-f']);
  t.same([...written].sort(), ['org-2/doc-a', 'org-2/doc-f'], 'no event of the deleted organization was ever in the outbox');
});

t.test('an event being written when its document is deleted is removed with it, never delivered', async (t) => {
  const { env, receiver, written } = await setUp(t);
  await edit(env, 'org-1', 'doc-a');
  await edit(env, 'org-1', 'doc-b');
  const events = env.running.services.crdtEvents;
  // Raised now: its transaction is queued as the delete request goes out, so it commits before the delete's last one.
  events.raiseDue(true);
  t.equal((await env.call('/v2/organizations/documents/delete', { organizationId: 'org-1', documentIds: ['doc-a'] })).status, 200);
  await events.settled();
  t.same([...written].sort(), ['org-1/doc-a', 'org-1/doc-b'], 'both were written before the delete');
  t.same(env.running.services.outbox.read().map((event) => event.documentId), ['doc-b'], 'the delete removed the deleted document\'s row');

  await edit(env, 'org-1', 'doc-b', 'update');
  t.same(await raiseAll(env, receiver, 2), ['org-1/doc-b', 'org-1/doc-b'], 'only the document left is delivered');
});
