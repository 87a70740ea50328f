// Tests the sync codec (src/sync/protocol.ts): round trips, and malformed frames reported, never thrown.
import fc from 'fast-check';
import t from 'tap';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import {
  messageType,
  readClientMessage,
  writeAwareness,
  writeExtension,
  writeSyncStep1,
  writeSyncStep2,
  writeUpdate,
} from '../../src/sync/protocol.js';

function sampleUpdate(): Uint8Array {
  const doc = new Y.Doc();
  doc.getText('content').insert(0, 'hello');
  return Y.encodeStateAsUpdate(doc);
}

t.test('every frame the server writes reads back as the same message', async (t) => {
  const update = sampleUpdate();
  const doc = new Y.Doc();
  const sv = Y.encodeStateVector(doc);
  t.same(readClientMessage(writeSyncStep1(sv)), { kind: 'sync-step1', stateVector: sv });
  t.same(readClientMessage(writeSyncStep2(update)), { kind: 'sync-step2', update });
  const updateFrame = writeUpdate(update);
  const readUpdate = readClientMessage(updateFrame);
  t.same(readUpdate, { kind: 'update', update, frame: updateFrame });
  t.equal(readUpdate.kind === 'update' ? readUpdate.frame : undefined, updateFrame, 'the update carries the very frame it came in (published unchanged)');
  const awareness = new awarenessProtocol.Awareness(doc);
  awareness.setLocalState({ name: 'Ada' });
  const encoded = awarenessProtocol.encodeAwarenessUpdate(awareness, [doc.clientID]);
  const read = readClientMessage(writeAwareness(encoded));
  t.equal(read.kind, 'awareness');
  t.same(read.kind === 'awareness' ? read.entries : [], [{ clientId: doc.clientID, clock: 1, state: { name: 'Ada' } }]);
  awareness.destroy();
  t.same(readClientMessage(new Uint8Array([3])), { kind: 'query-awareness' });
  t.equal(messageType(writeExtension(100, new Uint8Array([1, 2]))), 100);
  t.throws(() => writeExtension(7, new Uint8Array()), RangeError, 'extension types start at 100');
});

t.test('truncated, padded and unknown frames are malformed, never thrown', async (t) => {
  const frame = writeUpdate(sampleUpdate());
  for (let cut = 0; cut < frame.length; cut++) {
    t.equal(readClientMessage(frame.subarray(0, cut)).kind, 'malformed', `cut at ${cut}`);
  }
  t.equal(readClientMessage(new Uint8Array([...frame, 0])).kind, 'malformed', 'trailing byte');
  t.equal(readClientMessage(new Uint8Array([9, 1, 2])).kind, 'malformed', 'unknown type');
  t.equal(readClientMessage(new Uint8Array([0, 7, 0])).kind, 'malformed', 'unknown sync type');
  t.equal(readClientMessage(new Uint8Array([0, 2, 1, 0xff])).kind, 'malformed', 'update bytes that do not decode');
  t.equal(readClientMessage(new Uint8Array([1, 4, 1, 1, 1, 0x7b])).kind, 'malformed', 'awareness state that is not JSON');
  t.equal(readClientMessage(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])).kind, 'malformed', 'overlong varuint');
});

t.test('random bytes never throw and never pass as an update unless Yjs can decode them', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const message = readClientMessage(bytes);
      if (message.kind === 'update' || message.kind === 'sync-step2') Y.decodeUpdate(message.update);
      return true;
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random frames');
});
