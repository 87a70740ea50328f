// Tests fuzzed garbage frames: each closes only its own connection with 4400 and never touches the document.
import fc from 'fast-check';
import t from 'tap';
import * as Y from 'yjs';
import { CLOSE } from '../../src/errors.js';
import { readClientMessage, writeUpdate } from '../../src/sync/protocol.js';
import { connect, rawSocket, roomName, syncBase, synced, twoEditors, whenDocs, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-g', documentId: 'doc-g', editorId: 'main' };

/** Frames the parser must refuse: unknown types, truncations of real frames, wrong lengths, text frames. */
function garbageFrames(): Uint8Array[] {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, 'garbage never lands');
  const real = writeUpdate(Y.encodeStateAsUpdate(doc));
  const random = fc.sample(
    fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 48 }).map((bytes) => Uint8Array.from([4 + (bytes[0] ?? 0) % 90, ...bytes])),
      fc.integer({ min: 1, max: real.length - 1 }).map((cut) => real.slice(0, cut)),
      fc.uint8Array({ minLength: 1, maxLength: 48 }).map((bytes) => Uint8Array.from([0, 2, bytes.length + 5, ...bytes])),
      fc.uint8Array({ minLength: 1, maxLength: 48 }).map((bytes) => Uint8Array.from([0, ...bytes])),
    ),
    { numRuns: 40, seed: 42 },
  );
  return random.filter((frame) => readClientMessage(frame).kind === 'malformed');
}

t.test('garbage frames close only the connection that sent them; the others keep editing', async (t) => {
  const { url, token, a, b } = await twoEditors(t, room);
  a.text.insert(0, 'before');
  await whenDocs([b.doc], () => b.text.toString() === 'before');

  const frames = garbageFrames();
  t.ok(frames.length >= 30, `${frames.length} malformed frames`);
  const ends = await Promise.all(
    frames.map(async (frame) => {
      const { socket, ended } = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`);
      socket.send(frame);
      return ended;
    }),
  );
  // Every offender hears the server's 4400. (A 1006 here was the uWS 20.30 cork-after-async-upgrade bug closing
  // fresh sockets: src/ws/behavior.ts no longer upgrades inside res.cork.)
  t.same(
    ends.map((end) => end.code),
    ends.map(() => CLOSE.MALFORMED_FRAME),
    'every offender was closed with MALFORMED_FRAME (4400)',
  );
  const text = await rawSocket(`${syncBase(url)}/${roomName(room)}?token=${token}`);
  text.socket.send('a text frame');
  t.equal((await text.ended).code, CLOSE.MALFORMED_FRAME, 'text frames are malformed too');

  t.ok(a.provider.wsconnected && b.provider.wsconnected, 'the well-behaved clients stayed connected');
  b.text.insert(b.text.length, ' and after');
  await whenDocs([a.doc], () => a.text.toString() === 'before and after');
  t.equal(a.text.toString(), 'before and after', 'editing continues');
  const fresh = connect(t, url, room, token);
  await synced(fresh);
  t.equal(fresh.text.toString(), 'before and after', 'the document holds nothing from the garbage');
});
