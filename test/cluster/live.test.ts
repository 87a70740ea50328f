// Tests live comments and presence across two nodes: extension frames of the owner reach sockets relayed by another node.
import * as decoding from 'lib0/decoding';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import type { LiveMessage } from '../../src/doc/collab-state.js';
import { LIVE_MESSAGE_TYPE } from '../../src/ws/live-messages.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startClusterNodes } from '../helpers/server.js';
import { userToken } from '../helpers/sync.js';

const scope = { organizationId: 'org-live', documentId: 'doc-live' };

/** A stock y-websocket client with `ext=1` that collects the live messages (type 100) it receives. */
function liveClient(t: Test, baseUrl: string, token: string): { next(match: (m: LiveMessage) => boolean): Promise<LiveMessage> } {
  const received: LiveMessage[] = [];
  let waiters: Array<{ match: (m: LiveMessage) => boolean; resolve: (m: LiveMessage) => void }> = [];
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(`${baseUrl.replace(/^http/, 'ws')}/sync/${scope.organizationId}/${scope.documentId}`, 'main', doc, {
    WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
    disableBc: true,
    params: { token, ext: '1' },
  });
  provider.messageHandlers[LIVE_MESSAGE_TYPE] = (_encoder, decoder) => {
    const message = JSON.parse(decoding.readVarString(decoder)) as LiveMessage;
    received.push(message);
    for (const waiter of waiters.filter((w) => w.match(message))) {
      waiters = waiters.filter((w) => w !== waiter);
      waiter.resolve(message);
    }
  };
  t.teardown(() => {
    provider.destroy();
    doc.destroy();
  });
  return {
    next: (match) => {
      const seen = received.find(match);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

t.test('comments and presence are live across nodes', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const dataDir = t.testdir();
  const node = (nodeId: string) => ({ natsUrl: nats.url, nodeId, secretKey: 'f'.repeat(64) });
  const [n1, n2] = await startClusterNodes(t, [node('l1'), node('l2')], dataDir);
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();
  const token = (userId: string): Promise<string> => userToken(n1.api, credentials, [{ type: 'organization', id: scope.organizationId }], userId);

  const onOwner = liveClient(t, n1.url, await token('on-owner'));
  await onOwner.next((m) => m.presence.users.some((u) => u.userId === 'on-owner' && u.status === 'online'));
  t.ok(n1.server.services.documentActors.peek({ apiKey: credentials.apiKey, ...scope }), 'n1 owns the document');
  const relayed = liveClient(t, n2.url, await token('relayed'));
  await relayed.next((m) => m.snapshot);
  t.pass('the relayed extension connection gets its snapshot from the owner');
  await onOwner.next((m) => m.presence.users.some((u) => u.userId === 'relayed' && u.status === 'online'));
  t.pass("the owner's client sees the relayed user online");

  // A REST comment on the relaying node is forwarded to the owner and comes back live to both.
  const added = await n2.api.call(credentials, '/v2/commentannotations/add', { ...scope, commentAnnotations: [{ annotationId: 'x1', commentData: [{ commentText: 'across', from: { userId: 'rest' } }] }] });
  t.equal(added.status, 200);
  const isX1 = (m: LiveMessage): boolean => m.annotations.some((c) => c.op === 'upsert' && c.annotation.annotationId === 'x1');
  await Promise.all([relayed.next(isX1), onOwner.next(isX1)]);
  t.pass('the comment reached the clients on both nodes');

  const presence = await n1.api.call(credentials, '/v2/presence/update', { ...scope, users: [{ userId: 'rest-user', name: 'Rita', status: 'away' }] });
  t.equal(presence.status, 200);
  const seen = await relayed.next((m) => m.presence.users.some((u) => u.userId === 'rest-user'));
  t.match(seen.presence.users.find((u) => u.userId === 'rest-user'), { status: 'away', source: 'rest' }, 'REST presence on the owner reaches the relayed client');
});
