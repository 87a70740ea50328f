// Tests a large message resent past the stream's duplicate window after its first copy was purged and its blob deleted: no applier (running, new, or the compactor's) stalls on the second copy, and none applies it.
import { connect } from 'nats';
import { pack, unpack } from 'msgpackr';
import t from 'tap';
import { BLOB_BUCKET, STATE_STREAM, STATE_SUBJECT, type TxMessage } from '../../src/cluster/state-message.js';
import { DB } from '../../src/store/keys.js';
import type { ReplicatedOp } from '../../src/store/replication.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { openStateNode, type StateNode } from '../helpers/state-node.js';

/** Over the inline limit (1 MiB less 16 KiB): the message goes to the blob store. */
const LARGE = 1_100_000;

const rowsOf = (node: StateNode): string[] =>
  [...node.store.replicatedRows()].map((row: ReplicatedOp) => JSON.stringify([row[0], row[1], row[2] instanceof Uint8Array ? Buffer.from(row[2]).toString('base64') : row[2]]));

const valueOf = (node: StateNode, id: string): string | undefined => {
  const value = node.store.binary(DB.docUpdates).get(['blob-resend', id]);
  return value === undefined ? undefined : Buffer.from(value).subarray(0, 5).toString();
};

async function write(node: StateNode, id: string, value: Buffer): Promise<void> {
  await node.store.transaction(() => void node.store.binary(DB.docUpdates).put(['blob-resend', id], value));
}

t.test('a large message landing again after its first copy was purged and its blob deleted: no applier stalls, none applies it again', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  // A stalled applier shows as a catch-up that gives up (UNAVAILABLE) after 3 s, not as a hung test.
  const open = async (nodeId: string): Promise<StateNode> => {
    const node = await openStateNode(nats.url, nodeId, `${root}/${nodeId}`, { catchUpTimeoutMs: 3_000 });
    t.teardown(() => node.stop());
    return node;
  };
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const jsm = await nc.jetstreamManager();
  const blobs = await nc.jetstream().views.os(BLOB_BUCKET);
  const last = async (): Promise<number> => (await jsm.streams.info(STATE_STREAM)).state.last_seq;

  const writer = await open('w');
  const reader = await open('r');
  // Message n of the writer goes through the blob store; n+1 overwrites the same row with a small value.
  await write(writer, 'row', Buffer.concat([Buffer.from('first'), Buffer.alloc(LARGE)]));
  const first = await jsm.streams.getMessage(STATE_STREAM, { seq: await last() });
  const header = unpack(first.data) as TxMessage;
  t.ok(header.b !== undefined && header.ops === undefined, `the message carries only its blob's name (${header.b ?? ''})`);
  await write(writer, 'row', Buffer.from('later'));
  await reader.state.catchUp();
  t.equal(valueOf(reader, 'row'), 'later', 'the reader applied both');

  const compacted = await writer.state.compactor?.compact();
  t.equal(compacted?.purgedTo, await last(), 'compaction purged both messages');
  t.equal(compacted?.blobsDeleted, 1, 'and deleted the first one\'s blob');
  t.equal((await blobs.info(header.b ?? ''))?.deleted, true, 'the blob store keeps its delete marker');

  // The resend lands once more: the same bytes on the same subject. Its message id (`origin#n`) is what lets the
  // server drop a copy inside its 2-minute window; past it the copy is stored, which another id stands in for here.
  const ack = await nc.jetstream().publish(STATE_SUBJECT, first.data, { msgID: `${header.b ?? ''}/past-the-window` });
  t.equal(ack.duplicate, false, `the second copy is in the stream (seq ${ack.seq})`);
  await write(writer, 'after', Buffer.from('after'));

  // A running node knows the message was applied: it drops the copy without reading its blob.
  await reader.state.catchUp();
  t.equal(valueOf(reader, 'row'), 'later', 'the running reader passed the copy and did not apply it over the later write');
  t.equal(valueOf(reader, 'after'), 'after', 'and applied what came after it');

  // A new node rebuilds from the checkpoint, then meets the copy knowing nothing of its origin: the deleted blob says it
  // is a copy of a purged message.
  const fresh = await open('n');
  t.equal(valueOf(fresh, 'row'), 'later', 'a node rebuilt from the checkpoint passed the copy without applying it');
  t.equal(valueOf(fresh, 'after'), 'after', 'and applied what came after it');

  // The new node's compactor starts from the checkpoint too (an empty scratch store): it folds past the copy.
  const again = await fresh.state.compactor?.compact();
  t.equal(again?.seq, await last(), 'a compactor that knows nothing of the origin checkpoints past the copy');
  t.equal(again?.purgedTo, again?.seq, 'and purges it');
  const rebuilt = await open('m');
  t.equal(valueOf(rebuilt, 'row'), 'later', 'its checkpoint has the later value, not the copy\'s');
  for (const node of [writer, reader, fresh, rebuilt]) await node.state.catchUp();
  const reference = rowsOf(writer);
  for (const node of [reader, fresh, rebuilt]) t.same(rowsOf(node), reference, 'every node holds exactly the writer\'s rows');

  // A blob that was never written is not a copy of anything: the applier still stops there rather than lose a write.
  await nc.jetstream().publish(STATE_SUBJECT, pack({ o: 'ghost/1', n: 1, b: 'ghost/1#1' } satisfies TxMessage));
  await t.rejects(reader.state.catchUp(), { name: 'AppError', status: 'UNAVAILABLE' }, 'a message whose blob never existed still stops the applier');
});
