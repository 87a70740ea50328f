// Tests a sync connection on another node racing a delete on the document's owner: relayed, it waits, and gets 4404.
import t from 'tap';
import type { CollabDocuments } from '../../src/doc/collab-state.js';
import { CLOSE } from '../../src/errors.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes } from '../helpers/server.js';
import { connect, editorOf, nextClose, synced, userToken, type Room } from '../helpers/sync.js';

/** Runs `race` once, just before the collab owner's part of the next document delete (after the registry's). */
function beforeCollabOwner(collab: CollabDocuments, race: () => Promise<unknown>): { ran: () => boolean } {
  const original = collab.deleteDocumentData.bind(collab);
  let ran = false;
  collab.deleteDocumentData = async (ref) => {
    if (!ran) {
      ran = true;
      await race();
    }
    return original(ref);
  };
  return { ran: () => ran };
}

t.test("a client on another node connecting while the owner deletes the document is closed with 4404, nothing loads it", async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const nodes = await startClusterNodes(
    t,
    ['n1', 'n2'].map((nodeId) => ({ natsUrl: nats.url, nodeId, secretKey: 'd'.repeat(64), docIdleUnloadMs: 3_600_000 })),
  );
  const [n1, n2] = nodes;
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'doomed', editorId: 'main' };
  const key = { apiKey: credentials.apiKey, ...room };
  t.equal((await n1.api.call(credentials, '/v2/organizations/add', { organizations: [{ organizationId: 'org' }] })).status, 200);
  t.equal((await n1.api.call(credentials, '/v2/organizations/documents/add', { organizationId: 'org', documents: [{ documentId: room.documentId }] })).status, 200);
  t.equal((await n1.api.call(credentials, '/v2/crdt/add', { ...room, type: 'text', data: 'old text' })).status, 200, 'n1 loads the document and takes its lease');
  const token = await userToken(n1.api, credentials, [editorOf(room)]);
  const actors = n1.server.services.documentActors;
  const parked = new Promise<void>((resolve) => actors.holds.onWait((waiting) => waiting.documentId === room.documentId && resolve()));
  let late: ReturnType<typeof connect> | undefined;
  let outcome: Promise<number | 'synced'> | undefined;
  const hook = beforeCollabOwner(n1.server.services.collab, async () => {
    const client = connect(t, n2.url, room, token);
    late = client;
    outcome = Promise.race([nextClose(client).then(({ code }) => code), synced(client).then(() => 'synced' as const)]);
    await Promise.race([outcome, parked]);
  });
  t.equal((await n1.api.call(credentials, '/v2/organizations/documents/delete', { organizationId: 'org', documentIds: [room.documentId] })).status, 200);
  t.ok(hook.ran(), 'the client connected to n2 between two owners of the delete on n1');
  t.equal(await outcome, CLOSE.DOCUMENT_DELETED, 'relayed to n1, it waited for the delete and was closed with 4404');
  t.equal(late?.text.toString(), '', 'it was sent nothing of the document');
  t.equal(n2.server.services.documentActors.peek(key), undefined, 'n2 did not take the document over and load it');
  t.equal(actors.peek(key), undefined, 'nor did n1 load it again');
  await Promise.all(nodes.map((node) => node.server.stop()));
});
