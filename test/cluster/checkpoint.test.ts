// Tests the checkpoint format on a real object store: a round trip, and the refusals (another stream, cut short, gone).
import { pack } from 'msgpackr';
import { connect } from 'nats';
import t from 'tap';
import { CHECKPOINT_BUCKET, checkpointName, listCheckpoints, newestCheckpoint, readCheckpoint, writeCheckpoint, type CheckpointRef } from '../../src/cluster/checkpoint.js';
import type { ReplicatedOp } from '../../src/store/replication.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';

const frame = (value: unknown): Uint8Array => {
  const body = pack(value);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
};

t.test('checkpoints round-trip in order and in batches; another stream, a cut-short object and a deleted one are refused', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const os = await nc.jetstream().views.os(CHECKPOINT_BUCKET);

  const rows: ReplicatedOp[] = Array.from({ length: 4500 }, (_, i) => ['domains', [`key-${i}`], { i, text: 'x'.repeat(i % 300) }] as const);
  const written = await writeCheckpoint(os, { seq: 42, stream: 'stream-a' }, rows);
  t.equal(written.rows, 4500, 'every row written');
  t.ok(written.bytes > 256 * 1024, `in several pieces (${written.bytes} bytes)`);
  const ref = await newestCheckpoint(os);
  t.equal(ref?.seq, 42, 'listed under its sequence');
  if (ref === undefined) return;
  const batches: number[] = [];
  const read: ReplicatedOp[] = [];
  t.equal(await readCheckpoint(os, ref, 'stream-a', async (batch) => {
    batches.push(batch.length);
    read.push(...batch);
  }), 4500);
  t.same(read, rows, 'read back in order');
  t.same(batches, [2000, 2000, 500], 'in batches of 2000 rows');
  let fold: unknown;
  await readCheckpoint(os, ref, 'stream-a', async () => undefined, (meta) => (fold = meta));
  t.same(fold, [], 'a checkpoint written without the applier\'s fold state hands over none');

  // The applier's fold state (the newest claim per document, the open gaps) travels in the header, and version-1
  // checkpoints (no fold state) still load.
  const claims: Array<[string, unknown]> = [['fence:["k","o","d"]', { seq: 7, revision: 3 }], ['clusterGaps', [['node-a/1', 9, [8], [['x', 9]]]]]];
  await writeCheckpoint(os, { seq: 43, stream: 'stream-a', meta: claims }, rows.slice(0, 3));
  const withFold = await newestCheckpoint(os);
  t.equal(withFold?.seq, 43);
  if (withFold === undefined) return;
  let carried: unknown;
  t.equal(await readCheckpoint(os, withFold, 'stream-a', async () => undefined, (meta) => (carried = meta)), 3);
  t.same(carried, claims, 'the fold state is read back before the rows, as written');
  await os.delete(withFold.name);
  const v1 = frame({ v: 1, seq: 44, stream: 'stream-a' });
  const v1row = frame(['domains', ['k'], ['v']]);
  const v1end = frame({ end: 1 });
  const v1body = new Uint8Array(v1.length + v1row.length + v1end.length);
  v1body.set(v1);
  v1body.set(v1row, v1.length);
  v1body.set(v1end, v1.length + v1row.length);
  await os.putBlob({ name: checkpointName(44) }, v1body);
  let v1fold: unknown;
  t.equal(await readCheckpoint(os, { name: checkpointName(44), seq: 44, size: v1body.length }, 'stream-a', async () => undefined, (meta) => (v1fold = meta)), 1, 'a version-1 checkpoint still loads');
  t.same(v1fold, [], 'with no fold state');
  await os.delete(checkpointName(44));
  await t.rejects(readCheckpoint(os, ref, 'stream-b', async () => undefined), /belongs to another stream/, 'a checkpoint of another stream is refused');

  // An object without its trailer (as no writer makes, but a corrupted store might hold) is refused, rows or not.
  const header = frame({ v: 1, seq: 50, stream: 'stream-a' });
  const row = frame(['domains', ['k'], ['v']]);
  const body = new Uint8Array(header.length + row.length);
  body.set(header);
  body.set(row, header.length);
  await os.putBlob({ name: checkpointName(50) }, body);
  const short: CheckpointRef = { name: checkpointName(50), seq: 50, size: body.length };
  await t.rejects(readCheckpoint(os, short, 'stream-a', async () => undefined), /cut short/, 'a checkpoint cut short is refused');
  t.same((await listCheckpoints(os)).map((r) => r.seq), [42, 50], 'listed oldest first');
  await os.delete(ref.name);
  await t.rejects(readCheckpoint(os, ref, 'stream-a', async () => undefined), /is gone/, 'a deleted checkpoint is refused');
});
