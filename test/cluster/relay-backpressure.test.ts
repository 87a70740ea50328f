// Tests a relaying node's sockets against their backpressure limit: a reader there that stops reading is closed with 1013.
import t from 'tap';
import type { Config } from '../../src/config.js';
import { startClusterNodes } from '../helpers/server.js';
import { connect, editorOf, rawSocket, roomName, syncBase, synced, userToken, whenDocs, type Room } from '../helpers/sync.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { parseExposition, sampleValue } from '../helpers/prometheus.js';

async function metric(url: string, name: string): Promise<number> {
  return sampleValue(parseExposition(await (await fetch(`${url}/metrics`)).text()), name);
}

t.test('a reader on a relaying node that stops reading is closed at its limit, as on the owner', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const node = (nodeId: string): Partial<Config> => ({ natsUrl: nats.url, nodeId, secretKey: 'c'.repeat(64), clusterLeaseMs: 3000, apiKeyBytesPerSecond: 0, wsMaxBackpressureBytes: 256 * 1024 });
  const [owner, relay] = await startClusterNodes(t, [node('n1'), node('n2')]);
  if (owner === undefined || relay === undefined) throw new Error('two nodes');
  const credentials = await owner.api.createWorkspace();
  const room: Room = { organizationId: 'org', documentId: 'relayed-reader', editorId: 'main' };
  const writer = connect(t, owner.url, room, await userToken(owner.api, credentials, [editorOf(room)]));
  await synced(writer);
  t.ok(owner.server.services.documentActors.peek({ apiKey: credentials.apiKey, ...room }), 'n1 owns the document');
  const { socket, ended } = await rawSocket(`${syncBase(relay.url)}/${roomName(room)}?token=${await userToken(owner.api, credentials, [editorOf(room)])}`);
  t.teardown(() => socket.terminate());
  // The join's frames first, so the reader stops with nothing of the owner's in flight.
  await new Promise<void>((resolve) => socket.once('message', () => resolve()));
  socket.pause();
  const closedBefore = await metric(relay.url, 'plait_sync_connections_closed_total');

  // 100 KB appends, each a frame of its own (the next once a reading client on n2 has the last), until n2 gives up on
  // the reader that does not read (12 MB at most; its kernel takes a few).
  const watcher = connect(t, relay.url, room, await userToken(owner.api, credentials, [editorOf(room)]));
  await synced(watcher);
  for (let i = 0; i < 120 && (await metric(relay.url, 'plait_sync_connections_closed_total')) === closedBefore; i++) {
    writer.text.insert(writer.text.length, String(i % 10).repeat(100_000));
    await whenDocs([watcher.doc], () => watcher.text.length === writer.text.length);
  }
  t.equal(await metric(relay.url, 'plait_sync_connections_closed_total'), closedBefore + 1, 'n2 closed the reader (before: it buffered every frame up to uWS\'s backstop, then dropped frames silently)');
  socket.resume();
  t.equal((await ended).code, 1013, 'with BACKPRESSURE, so the client reconnects and resyncs');
  // Stopped while NATS is up: teardown stops NATS first, and the nodes would wait out their release timeouts.
  await Promise.all([owner.server.stop(), relay.server.stop()]);
});
