// Tests snapshot folds across nodes: the owner's fold (a snapshot and one range removal of the entries it folds) leaves every node's cache with the same rows, and another node serves the folded document.
import t from 'tap';
import { DB, type DbName } from '../../src/store/keys.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes, type TestServer } from '../helpers/server.js';

const DOCUMENT_ROWS: ReadonlySet<DbName> = new Set<DbName>([DB.docUpdates, DB.docSnapshots, DB.editorDocMeta]);

/** The document data rows of a node's cache (log entries, snapshots, metas), in a comparable form. */
function documentRows(node: TestServer): string[] {
  return [...node.server.services.store.replicatedRows()]
    .filter((row) => DOCUMENT_ROWS.has(row[0]))
    .map((row) => JSON.stringify([row[0], row[1], row[2] instanceof Uint8Array ? Buffer.from(row[2]).toString('base64') : row[2]]));
}

const entriesOf = (rows: readonly string[]): number => rows.filter((row) => row.startsWith(`["${DB.docUpdates}"`)).length;

t.test("the owner's folds reach the other node as the same rows, and that node serves the document after the owner stops", async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  // A fold after every 4 log entries, so 13 writes fold three times.
  const [f1, f2] = (await startClusterNodes(t, [
    { natsUrl: nats.url, nodeId: 'f1', secretKey: 'f'.repeat(64), compactAfterUpdates: 4 },
    { natsUrl: nats.url, nodeId: 'f2', secretKey: 'f'.repeat(64), compactAfterUpdates: 4 },
  ])) as [TestServer, TestServer];
  const credentials = await f1.api.createWorkspace();
  const room = { organizationId: 'org-fold', documentId: 'folded', editorId: 'main' };
  t.equal((await f1.api.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'v0' })).status, 200);
  for (let i = 1; i <= 12; i++) t.equal((await f1.api.call(credentials, '/v2/crdt/update', { ...room, type: 'text', data: `v${i}` })).status, 200, `write ${i} acknowledged`);

  for (const node of [f1, f2]) await node.server.cluster?.state.catchUp();
  const owner = documentRows(f1);
  t.ok(owner.some((row) => row.startsWith(`["${DB.docSnapshots}"`)), 'the owner folded: a snapshot is stored');
  t.ok(entriesOf(owner) < 4, `the folded entries are gone from the owner's log (${entriesOf(owner)} left of 13 writes)`);
  t.same(documentRows(f2), owner, 'the other node holds exactly the same log entries, snapshot and meta');

  await f1.server.stop();
  const read = await f2.api.call<Array<{ data: unknown }>>(credentials, '/v2/crdt/get', room);
  t.equal(read.status, 200);
  t.same(read.body.result?.data.map((record) => record.data), ['v12'], 'the other node serves the last write from the folded rows');
});
