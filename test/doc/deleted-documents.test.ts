// Tests that deleting loaded documents over REST (one by one, by folder, by organization) leaves nothing of them in memory.
import t from 'tap';
import type { Credentials } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ORG = 'org1';
const DOCS = 20;

/** A comment on each document, which loads it (and its collab state) until it is unloaded or deleted. */
async function loadWithComments(server: TestServer, credentials: Credentials, organizationId: string, documentIds: readonly string[]): Promise<void> {
  for (const documentId of documentIds) {
    const added = await server.api.call(credentials, '/v2/commentannotations/add', {
      organizationId,
      documentId,
      commentAnnotations: [{ annotationId: 'c1', commentData: [{ commentText: 'kept until deleted', from: { userId: 'ann' } }] }],
    });
    if (added.status !== 200) throw new Error(JSON.stringify(added.body));
  }
}

t.test('documents deleted while loaded leave no actor and no collab writes entry behind', async (t) => {
  // Idle unload far away: only the deletions can free the documents during the test.
  const server = await startTestServer(t, { docIdleUnloadMs: 3_600_000 });
  const credentials = await server.api.createWorkspace();
  const { collab, documentActors } = server.server.services;
  const ok = async (path: string, data: unknown): Promise<void> => {
    const res = await server.api.call(credentials, path, data);
    t.equal(res.status, 200, `${path} ${JSON.stringify(res.body.error ?? '')}`);
  };
  const ids = (prefix: string): string[] => Array.from({ length: DOCS }, (_, i) => `${prefix}-${i}`);
  await ok('/v2/organizations/add', { organizations: [{ organizationId: ORG }, { organizationId: 'org2' }] });
  await ok('/v2/organizations/folders/add', { organizationId: ORG, folders: [{ folderId: 'f' }] });
  await ok('/v2/organizations/documents/add', { organizationId: ORG, documents: ids('single').map((documentId) => ({ documentId })) });
  await ok('/v2/organizations/documents/add', { organizationId: ORG, folderId: 'f', documents: ids('foldered').map((documentId) => ({ documentId })) });
  await loadWithComments(server, credentials, ORG, [...ids('single'), ...ids('foldered')]);
  await loadWithComments(server, credentials, 'org2', ids('org'));
  t.equal(documentActors.loadedCount, 3 * DOCS, 'every document is loaded');
  t.equal(collab.trackedWrites, 3 * DOCS, 'each with its writes entry');

  await ok('/v2/organizations/documents/delete', { organizationId: ORG, documentIds: ids('single') });
  t.equal(documentActors.loadedCount, 2 * DOCS, 'deleted documents are unloaded');
  t.equal(collab.trackedWrites, 2 * DOCS, 'and their writes entries go with them');

  await ok('/v2/organizations/folders/delete', { organizationId: ORG, folderId: 'f' });
  t.equal(collab.trackedWrites, DOCS, "a deleted folder's documents too");

  await ok('/v2/organizations/delete', { organizationIds: ['org2'] });
  t.equal(documentActors.loadedCount, 0, "and a deleted organization's");
  t.equal(collab.trackedWrites, 0, 'nothing is kept for documents that no longer exist');
});
