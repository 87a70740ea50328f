// Tests a fresh node's catch-up over more large state messages than nats-server buffers for one client: it asks for few enough at once that it is never closed as a slow consumer.
import t from 'tap';
import { INLINE_LIMIT, STATE_PULL_MESSAGES } from '../../src/cluster/state-message.js';
import { DB } from '../../src/store/keys.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { openStateNode } from '../helpers/state-node.js';

/** nats-server's per-client buffer in this test: a quarter of the default 64 MiB, so a quarter of the data shows the failure. */
const MAX_PENDING = 16 * 1024 * 1024;
const MESSAGES = 120;
const VALUE_BYTES = 300 * 1024;

/** A value no two messages share, so a mix-up of rows shows. */
function value(index: number): Uint8Array {
  const bytes = new Uint8Array(VALUE_BYTES);
  let x = index + 1;
  for (let i = 0; i < bytes.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}

t.test('the most a state consumer has outstanding stays under the default per-client buffer', async (t) => {
  // What the catch-up test below relies on, for the server's default max_pending (64 MiB) and the largest inline message.
  t.ok(STATE_PULL_MESSAGES * INLINE_LIMIT <= 64 * 1024 * 1024 / 2, `${STATE_PULL_MESSAGES} messages of up to ${INLINE_LIMIT} bytes are at most half of 64 MiB`);
});

t.test('a fresh node catches up on 35 MB of large messages with a 16 MiB server buffer per client', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin, t.testdir(), -1, `max_pending: ${MAX_PENDING}`);
  const root = t.testdir();
  const a = await openStateNode(nats.url, 'a', `${root}/a`);
  t.teardown(a.stop);
  const snapshots = a.store.binary(DB.docSnapshots);
  // One transaction each: one stream message of ~300 KB each, ~35 MB in all, more than twice the server's buffer.
  for (let i = 0; i < MESSAGES; i++) await a.store.transaction(() => void snapshots.put(['key', 'org', `doc${i}`, 'main'], value(i)));
  t.ok(VALUE_BYTES * MESSAGES > 2 * MAX_PENDING, 'the stream holds more than twice what the server buffers for one client');

  // Asking for 512 at once, this node was closed as a slow consumer at every attempt and timed out here.
  const b = await openStateNode(nats.url, 'b', `${root}/b`, { catchUpTimeoutMs: 20_000 });
  t.teardown(b.stop);
  const copied = b.store.binary(DB.docSnapshots);
  let same = 0;
  for (let i = 0; i < MESSAGES; i++) {
    const row = copied.get(['key', 'org', `doc${i}`, 'main']);
    if (row !== undefined && Buffer.from(row).equals(Buffer.from(value(i)))) same++;
  }
  t.equal(same, MESSAGES, 'every row reached the fresh node, byte for byte');
  t.notMatch(nats.output(), /Slow Consumer/i, 'nats-server closed no client as a slow consumer');
});
