// Tests that a cluster node gives up the lease of every loaded document it deletes, as it does at an idle unload.
import t from 'tap';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes } from '../helpers/server.js';

const DOCS = 10;

t.test('deleting loaded documents and organizations releases their leases; none is held or renewed afterwards', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  // Idle unload far away: only the deletions can release the leases during the test.
  const [node] = await startClusterNodes(t, [{ natsUrl: nats.url, nodeId: 'only', secretKey: 'a'.repeat(64), docIdleUnloadMs: 3_600_000 }]);
  if (node === undefined) throw new Error('one node');
  const leases = node.server.cluster?.leases;
  if (leases === undefined) throw new Error('a cluster node has leases');
  const credentials = await node.api.createWorkspace();
  const ok = async (path: string, data: unknown): Promise<void> => {
    const res = await node.api.call(credentials, path, data);
    t.equal(res.status, 200, `${path} ${JSON.stringify(res.body.error ?? '')}`);
  };
  const ids = (prefix: string): string[] => Array.from({ length: DOCS }, (_, i) => `${prefix}-${i}`);
  await ok('/v2/organizations/add', { organizations: [{ organizationId: 'org1' }, { organizationId: 'org2' }] });
  await ok('/v2/organizations/documents/add', { organizationId: 'org1', documents: ids('doc').map((documentId) => ({ documentId })) });
  for (const [organizationId, documentId] of [...ids('doc').map((id) => ['org1', id]), ...ids('other').map((id) => ['org2', id])]) {
    await ok('/v2/commentannotations/add', { organizationId, documentId, commentAnnotations: [{ annotationId: 'c1', commentData: [{ commentText: 'x', from: { userId: 'ann' } }] }] });
  }
  t.equal(leases.heldCount, 2 * DOCS, 'each loaded document holds its lease');

  await ok('/v2/organizations/documents/delete', { organizationId: 'org1', documentIds: ids('doc') });
  t.equal(leases.heldCount, DOCS, 'deleted documents give their leases up');
  await ok('/v2/organizations/delete', { organizationIds: ['org2'] });
  t.equal(leases.heldCount, 0, "so do a deleted organization's documents");
  t.equal(node.server.services.documentActors.loadedCount, 0);
  t.equal(node.server.services.collab.trackedWrites, 0);
});
