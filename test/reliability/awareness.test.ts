// Tests issue 10 item 7: awareness is bounded per state and per connection, and nobody may change another client's state.
import * as encoding from 'lib0/encoding';
import t from 'tap';
import { AwarenessGuard, MAX_AWARENESS_CLIENTS_PER_CONNECTION, type AwarenessRefusal } from '../../src/doc/awareness-guard.js';
import { writeAwareness, type AwarenessEntry } from '../../src/sync/protocol.js';
import { FakePeer } from '../helpers/fake-peer.js';
import { startTestServer } from '../helpers/server.js';
import { connect, editorOf, rawSocket, roomName, syncBase, synced, userToken, viewerOf, type Client, type Room } from '../helpers/sync.js';

function encode(entries: readonly AwarenessEntry[]): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, entries.length);
  for (const entry of entries) {
    encoding.writeVarUint(encoder, entry.clientId);
    encoding.writeVarUint(encoder, entry.clock);
    encoding.writeVarString(encoder, JSON.stringify(entry.state));
  }
  return encoding.toUint8Array(encoder);
}

t.test('the guard: owners, state size, client ids per connection, rate', (t) => {
  let now = 0;
  const refused: AwarenessRefusal[] = [];
  const guard = new AwarenessGuard({ awarenessMaxStateBytes: 100, awarenessUpdatesPerSecond: 5 }, (_peer, why) => refused.push(why), () => now);
  const a = new FakePeer('a');
  const b = new FakePeer('b');
  const mine = [{ clientId: 1, clock: 1, state: { x: 1 } }];
  t.ok(guard.admit(a, encode(mine), mine), 'a claims client 1');
  const forged = [{ clientId: 1, clock: 2, state: { x: 'forged' } }];
  t.equal(guard.admit(b, encode(forged), forged), undefined, 'b may not change client 1');
  const removal = [{ clientId: 1, clock: 3, state: null }];
  t.equal(guard.admit(b, encode(removal), removal), undefined, 'nor remove it');
  const mixed = [{ clientId: 2, clock: 1, state: { y: 1 } }, { clientId: 1, clock: 4, state: { x: 'forged' } }];
  const kept = guard.admit(b, encode(mixed), mixed);
  t.same(kept, encode([mixed[0] as AwarenessEntry]), 'a mixed frame keeps only the entries b owns');
  const big = [{ clientId: 2, clock: 2, state: { y: 'x'.repeat(200) } }];
  t.equal(guard.admit(b, encode(big), big), undefined, 'a state over the size limit is dropped');
  t.same(refused, ['not-owner', 'not-owner', 'not-owner', 'size']);

  now += 10_000;
  const many = Array.from({ length: MAX_AWARENESS_CLIENTS_PER_CONNECTION + 2 }, (_, i) => ({ clientId: 100 + i, clock: 1, state: {} }));
  const admitted = guard.admit(new FakePeer('c'), encode(many), many);
  t.same(admitted, encode(many.slice(0, MAX_AWARENESS_CLIENTS_PER_CONNECTION)), `at most ${MAX_AWARENESS_CLIENTS_PER_CONNECTION} client ids per connection`);

  now += 10_000;
  const renew = (clock: number): Uint8Array | undefined => {
    const entries = [{ clientId: 1, clock, state: { x: clock } }];
    return guard.admit(a, encode(entries), entries);
  };
  const burst = Array.from({ length: 8 }, (_, i) => renew(10 + i)).filter((u) => u !== undefined).length;
  t.equal(burst, 5, 'a burst passes up to the rate, the rest is dropped');
  now += 200;
  t.ok(renew(30), 'a token comes back after 1/rate seconds');
  t.equal(renew(31), undefined);

  t.same(guard.release(a).sort(), [1], 'a closing connection hands back what it owned');
  t.ok(guard.admit(b, encode(forged), forged), 'a free client id may be claimed again');
  t.end();
});

const room: Room = { organizationId: 'org-aw', documentId: 'doc-aw', editorId: 'main' };

/** Resolves when `client` sees a state for `clientId` that satisfies `check`. */
function seen(client: Client, clientId: number, check: (state: unknown) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const probe = (): void => {
      if (!check(client.provider.awareness.getStates().get(clientId))) return;
      client.provider.awareness.off('change', probe);
      resolve();
    };
    client.provider.awareness.on('change', probe);
    probe();
  });
}

t.test('over the wire: a viewer cannot overwrite an editor\'s cursor, and oversized states never reach anyone', async (t) => {
  const { api, url } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const editor = await userToken(api, credentials, [editorOf(room)]);
  const viewer = await userToken(api, credentials, [viewerOf(room)]);
  const a = connect(t, url, room, editor);
  const b = connect(t, url, room, editor);
  await Promise.all([synced(a), synced(b)]);
  a.provider.awareness.setLocalStateField('user', { name: 'Ada' });
  await seen(b, a.doc.clientID, (state) => JSON.stringify(state) === '{"user":{"name":"Ada"}}');

  const attacker = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${viewer}`);
  const own = 424242;
  const heard: string[] = [];
  b.provider.awareness.on('change', () => heard.push(JSON.stringify(b.provider.awareness.getStates().get(own)) ?? ''));
  const send = (entries: AwarenessEntry[]): void => attacker.socket.send(writeAwareness(encode(entries)));
  send([{ clientId: a.doc.clientID, clock: 1_000_000, state: { user: { name: 'forged' } } }]);
  send([{ clientId: own, clock: 1, state: { big: 'x'.repeat(20_000) } }]);
  // Frames of one connection are handled in order: once b sees this one, the two before it were handled.
  send([{ clientId: own, clock: 2, state: { marker: true } }]);
  await seen(b, own, (state) => JSON.stringify(state) === '{"marker":true}');
  t.same(b.provider.awareness.getStates().get(a.doc.clientID), { user: { name: 'Ada' } }, 'a\'s state is untouched at b');
  t.ok(heard.every((state) => state.length < 1000), 'the 20 KB state never reached b');
  t.same(a.provider.awareness.getStates().get(a.doc.clientID), { user: { name: 'Ada' } }, 'and at a');
  attacker.socket.close();
  await seen(b, own, (state) => state === undefined);
  t.pass('the attacker\'s own state is removed when it disconnects');
});
