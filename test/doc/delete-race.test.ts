// Tests writes and sync connections racing a document or organization delete: they land wholly before or wholly after it.
import t, { type Test } from 'tap';
import type { Key } from 'lmdb';
import type { CollabDocuments } from '../../src/doc/collab-state.js';
import type { DocumentActors } from '../../src/doc/registry.js';
import { CLOSE } from '../../src/errors.js';
import type { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { DOCUMENT_DATABASES } from '../../src/tenant/directory/data-owners.js';
import type { Credentials } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { connect, editorOf, nextClose, synced, userToken } from '../helpers/sync.js';

const ORG = 'org1';
const DOC = 'doc1';

type Call = (path: string, data: unknown) => Promise<{ status: number; body: { result?: { data: unknown }; error?: unknown } }>;

function caller(server: TestServer, credentials: Credentials): Call {
  return (path, data) => server.api.call(credentials, path, data);
}

/** Adds thread `annotationId` to the document (loading it); answers the call's status. */
async function comment(call: Call, documentId: string, annotationId: string): Promise<number> {
  const added = await call('/v2/commentannotations/add', {
    organizationId: ORG,
    documentId,
    commentAnnotations: [{ annotationId, commentData: [{ commentText: `${annotationId} thread`, from: { userId: 'ann' } }] }],
  });
  return added.status;
}

/** The annotation ids the document answers with. */
async function threads(call: Call, documentId: string): Promise<string[]> {
  const listed = await call('/v2/commentannotations/get', { organizationId: ORG, documentId });
  return ((listed.body.result?.data ?? []) as Array<{ annotationId: string }>).map((thread) => thread.annotationId).sort();
}

/** Every row under the document's prefix in the databases the delete's owners clear: name, key and (records) value as JSON. */
function documentRows(store: Store, apiKey: string, documentId: string): string[] {
  // A new range object each time: lmdb's getKeys marks the one it is given as keys-only.
  const range = (): { start: Key[]; end: Key[] } => ({ start: [apiKey, ORG, documentId], end: [apiKey, ORG, documentId, KEY_END] });
  return DOCUMENT_DATABASES.flatMap((name) => {
    if (name === DB.docUpdates || name === DB.docSnapshots) return Array.from(store.binary(name).getKeys(range()) as Iterable<Key[]>, (key) => `${name} ${JSON.stringify(key)}`);
    return Array.from(store.records<unknown>(name).getRange(range()), ({ key, value }) => `${name} ${JSON.stringify(key)} ${JSON.stringify(value)}`);
  });
}

/**
 * Runs `race` once, just before the collab owner's part of the next delete: after the registry's owner took the
 * documents down and removed their CRDT rows, before threads, presence and the directory entries go. `race` starts
 * the racing call and answers once it either finished or is parked on a hold (`DocumentHolds.onWait`).
 */
function beforeCollabOwner(collab: CollabDocuments, method: 'deleteDocumentData' | 'deleteOrganizationData', race: () => Promise<unknown>): { ran: () => boolean } {
  const original = collab[method].bind(collab) as (...args: unknown[]) => Promise<void>;
  let ran = false;
  (collab as unknown as Record<string, unknown>)[method] = async (...args: unknown[]): Promise<void> => {
    if (!ran) {
      ran = true;
      await race();
    }
    return original(...args);
  };
  return { ran: () => ran };
}

/** Resolves when an acquirer of `documentId` starts waiting on a hold. */
function parked(actors: DocumentActors, documentId: string): Promise<void> {
  return new Promise((resolve) => actors.holds.onWait((key) => key.documentId === documentId && resolve()));
}

async function setup(t: Test): Promise<{ server: TestServer; credentials: Credentials; call: Call }> {
  const server = await startTestServer(t, { docIdleUnloadMs: 3_600_000 });
  const credentials = await server.api.createWorkspace();
  const call = caller(server, credentials);
  t.equal((await call('/v2/organizations/add', { organizations: [{ organizationId: ORG }] })).status, 200);
  t.equal((await call('/v2/organizations/documents/add', { organizationId: ORG, documents: [{ documentId: DOC }, { documentId: 'other' }] })).status, 200);
  t.equal(await comment(call, DOC, 'old'), 200, 'the document has a thread');
  t.equal((await call('/v2/crdt/add', { organizationId: ORG, documentId: DOC, editorId: 'main', type: 'text', data: 'old text' })).status, 200, 'and CRDT content');
  return { server, credentials, call };
}

/** What is left: nothing of the old document anywhere, and the racing thread wholly there (read and stored) or wholly gone. */
function checkWholly(t: Test, store: Store, apiKey: string, listed: readonly string[], rows: readonly string[]): void {
  t.same(listed, ['new'], 'the racing comment landed on a fresh document: only its thread is read back');
  t.same(rows.filter((row) => row.includes('old thread') || row.startsWith(`${DB.docUpdates} `) || row.startsWith(`${DB.docSnapshots} `)), [], 'no row of the deleted document is left');
  t.ok(rows.some((row) => row.startsWith(`${DB.annotations} `) && row.includes('new thread')), 'the racing thread is stored as it is read');
  t.equal(documentRows(store, apiKey, 'other').length, 0, 'the untouched document has no rows (nothing was written to it)');
}

t.test('a comment racing a documents/delete between two owners lands wholly after it, on a fresh document', async (t) => {
  const { server, credentials, call } = await setup(t);
  const { collab, documentActors, store } = server.server.services;
  let racing: Promise<number> | undefined;
  const hook = beforeCollabOwner(collab, 'deleteDocumentData', async () => {
    racing = comment(call, DOC, 'new');
    await Promise.race([racing, parked(documentActors, DOC)]);
  });
  const deleted = await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: [DOC] });
  t.equal(deleted.status, 200);
  t.ok(hook.ran(), 'the comment was sent between two owners of the delete');
  t.equal(await racing, 200, 'the racing comment is answered 200');
  checkWholly(t, store, credentials.apiKey, await threads(call, DOC), documentRows(store, credentials.apiKey, DOC));
  const text = await call('/v2/crdt/get', { organizationId: ORG, documentId: DOC, editorId: 'main' });
  t.notOk(JSON.stringify(text.body).includes('old text'), 'the deleted CRDT content is not read back');
});

t.test('a comment racing an organization delete on a document not loaded when it began lands wholly after it', async (t) => {
  const first = await setup(t);
  // Restarted: nothing is loaded, so only a hold on the whole organization can cover the document.
  const server = await first.server.restart();
  const call = caller(server, first.credentials);
  const { collab, documentActors, store } = server.server.services;
  t.equal(documentActors.loadedCount, 0, 'no document is loaded when the delete begins');
  let racing: Promise<number> | undefined;
  const hook = beforeCollabOwner(collab, 'deleteOrganizationData', async () => {
    racing = comment(call, DOC, 'new');
    await Promise.race([racing, parked(documentActors, DOC)]);
  });
  t.equal((await call('/v2/organizations/delete', { organizationIds: [ORG] })).status, 200);
  t.ok(hook.ran(), 'the comment was sent between two owners of the delete');
  t.equal(await racing, 200, 'the racing comment is answered 200');
  checkWholly(t, store, first.credentials.apiKey, await threads(call, DOC), documentRows(store, first.credentials.apiKey, DOC));
});

t.test('a sync connection arriving during a documents/delete is closed with 4404, as those open when it began', async (t) => {
  const { server, credentials, call } = await setup(t);
  const { collab, documentActors, store } = server.server.services;
  const room = { organizationId: ORG, documentId: DOC, editorId: 'main' };
  const token = await userToken(server.api, credentials, [editorOf(room)]);
  const open = connect(t, server.url, room, token);
  await synced(open);
  const openClosed = nextClose(open);
  let late: ReturnType<typeof connect> | undefined;
  let lateOutcome: Promise<number | 'synced'> | undefined;
  const hook = beforeCollabOwner(collab, 'deleteDocumentData', async () => {
    const client = connect(t, server.url, room, token);
    late = client;
    lateOutcome = Promise.race([nextClose(client).then(({ code }) => code), synced(client).then(() => 'synced' as const)]);
    await Promise.race([lateOutcome, parked(documentActors, DOC)]);
  });
  t.equal((await call('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: [DOC] })).status, 200);
  t.ok(hook.ran(), 'the client connected between two owners of the delete');
  t.equal((await openClosed).code, CLOSE.DOCUMENT_DELETED, 'the connection open when the delete began is closed with 4404');
  t.equal(await lateOutcome, CLOSE.DOCUMENT_DELETED, 'the one that arrived meanwhile too, never synced to a half-deleted document');
  t.equal(late?.text.toString(), '', 'it was sent nothing of the document');
  t.same(documentRows(store, credentials.apiKey, DOC), [], 'the document is gone, nothing loaded it again');
  t.equal(documentActors.peek({ apiKey: credentials.apiKey, organizationId: ORG, documentId: DOC }), undefined, 'nor is it loaded');
});
