// Tests the bench's floor variants with Plait's guarantees: a logged floor relays like the floor and leaves Plait's own log rows on disk.
import { rmSync } from 'node:fs';
import t from 'tap';
import WebSocket from 'ws';
import * as Y from 'yjs';
import { connectClient, syncTarget } from '../../bench/lib/clients.js';
import { launchServer } from '../../bench/lib/launch.js';
import { Store } from '../../src/store/env.js';
import { Snapshots } from '../../src/store/snapshots.js';

/** Resolves once `check` holds, testing it at every change of `doc`. */
function until(doc: Y.Doc, check: () => boolean): Promise<void> {
  if (check()) return Promise.resolve();
  return new Promise((resolve) => {
    const seen = (): void => {
      if (!check()) return;
      doc.off('update', seen);
      resolve();
    };
    doc.on('update', seen);
  });
}

for (const kind of ['floor-logged', 'floor-checked-logged'] as const) {
  const checked = kind === 'floor-checked-logged';
  t.test(`${kind} relays updates${checked ? ', drops a malformed frame' : ''} and writes its rooms to the update log`, async (t) => {
    const server = await launchServer(kind, { keepData: true });
    t.teardown(() => rmSync(server.dataDir, { recursive: true, force: true }));
    const target = await syncTarget(server);
    const writer = connectClient(target, 'room-a');
    const reader = connectClient(target, 'room-a');
    t.teardown(() => {
      writer.destroy();
      reader.destroy();
    });
    await Promise.all([writer.synced, reader.synced]);

    if (checked) {
      // A frame whose update does not decode: Plait's codec reads it as malformed, the checked floor drops it and serves on.
      const raw = new WebSocket(`ws://127.0.0.1:${server.port}/room-a`);
      await new Promise((resolve, reject) => raw.once('open', resolve).once('error', reject));
      raw.send(Uint8Array.of(0, 2, 3, 0xff, 0xff, 0xff));
      raw.close();
    }

    for (let i = 0; i < 50; i++) writer.doc.getText('content').insert(i, 'x');
    writer.doc.getMap('meta').set('done', true);
    await until(reader.doc, () => reader.doc.getMap('meta').get('done') === true);
    t.equal(reader.doc.getText('content').toString(), 'x'.repeat(50), 'the reader has every update');
    t.equal(reader.disconnects(), 0, 'the reader was never dropped');

    // What the floor logged, read back as Plait reads a store (snapshot and tail), gives the same document.
    await server.settle();
    await server.stop();
    const store = Store.open(server.dataDir);
    t.teardown(() => store.close());
    const [loaded] = new Snapshots(store).load('floor', 'floor', 'room-a');
    if (loaded === undefined) return t.fail('no store of room-a in the log');
    const doc = new Y.Doc();
    if (loaded.snapshot !== undefined) Y.applyUpdate(doc, loaded.snapshot);
    for (const update of loaded.updates) Y.applyUpdate(doc, update);
    t.equal(doc.getText('content').toString(), 'x'.repeat(50), 'what the log holds loads into the same text');
    t.equal(doc.getMap('meta').get('done'), true, 'and the same map');
  });
}
