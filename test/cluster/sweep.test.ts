// Tests the sweep of the state log's object stores: uploads cut off half-way and blobs a previous holder left are removed, the newest checkpoint still rebuilds a node, and an upload in progress is never swept.
import { randomBytes } from 'node:crypto';
import { connect, consumerOpts, type JetStreamManager, type NatsConnection } from 'nats';
import t, { type Test } from 'tap';
import { CHECKPOINT_BUCKET, listCheckpoints } from '../../src/cluster/checkpoint.js';
import { leaseKey, ROLE_BUCKET } from '../../src/cluster/leases.js';
import { BLOB_BUCKET, STATE_STREAM } from '../../src/cluster/state-message.js';
import { nodeLivenessKey } from '../../src/cluster/worker-lease.js';
import { DB } from '../../src/store/keys.js';
import type { ReplicatedOp } from '../../src/store/replication.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const secretKey = 'e'.repeat(64);
const CHUNK = 128 * 1024;

const compactorOf = (node: TestServer) => {
  const compactor = node.server.cluster?.state.compactor;
  if (compactor === undefined) throw new Error('a cluster node');
  return compactor;
};

async function writeRow(node: TestServer, id: string, bytes: number): Promise<void> {
  const store = node.server.services.store;
  await store.transaction(() => void store.binary(DB.docUpdates).put(['sweep-test', id], randomBytes(bytes)));
}

const rowsOf = (node: TestServer): string[] =>
  [...node.server.services.store.replicatedRows()].map((row: ReplicatedOp) => JSON.stringify([row[0], row[1], row[2] instanceof Uint8Array ? Buffer.from(row[2]).toString('base64') : row[2]]));

async function natsClient(t: Test, url: string): Promise<NatsConnection> {
  const nc = await connect({ servers: url });
  t.teardown(() => nc.close());
  return nc;
}

/** Object ids (nats.js nuids) that have chunks in `bucket`, and those of them no object's metadata names. */
async function uploads(nc: NatsConnection, jsm: JetStreamManager, bucket: string): Promise<{ all: string[]; orphans: string[] }> {
  const prefix = `$O.${bucket}.C.`;
  const subjects = (await jsm.streams.info(`OBJ_${bucket}`, { subjects_filter: `${prefix}>` })).state.subjects ?? {};
  const all = Object.keys(subjects).map((subject) => subject.slice(prefix.length));
  const live = new Set((await (await nc.jetstream().views.os(bucket)).list()).map((info) => info.nuid));
  return { all, orphans: all.filter((nuid) => !live.has(nuid)) };
}

/** Starts watching `bucket`'s chunks; `stored` resolves once JetStream has stored one (an ordered consumer sees only stored messages). */
async function chunkStored(nc: NatsConnection, bucket: string): Promise<{ stored: Promise<void> }> {
  const options = consumerOpts();
  options.orderedConsumer();
  options.deliverNew();
  const sub = await nc.jetstream().subscribe(`$O.${bucket}.C.>`, options);
  const stored = (async () => {
    for await (const message of sub) {
      void message;
      break;
    }
    sub.unsubscribe();
  })();
  return { stored };
}

t.test('a cut-off checkpoint\'s chunks, a cut-off blob upload and blobs a previous holder left are swept; the newest checkpoint still rebuilds a node', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const start = (nodeId: string): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey, clusterCheckpointBytes: 0 }, `${root}/${nodeId}`, { autoDeliver: false });
  const nc = await natsClient(t, nats.url);
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const blobs = await js.views.os(BLOB_BUCKET);
  const blobNames = async (): Promise<string[]> => (await blobs.list()).map((info) => info.name);

  const s1 = await start('s1');
  await writeRow(s1, 'big-1', 1_100_000);
  await writeRow(s1, 'big-2', 1_100_000);
  await writeRow(s1, 'small', 1000);
  t.equal((await blobNames()).length, 2, 'two large writes went to the blob store');
  // The holder writes its checkpoint, but a live node that never answers keeps it from purging: its blobs stay pending.
  const roles = await js.views.kv(ROLE_BUCKET);
  const ghost = leaseKey(nodeLivenessKey('ghost'));
  await roles.put(ghost, JSON.stringify({ node: 'ghost', expiresAt: Date.now() + 600_000 }));
  const checkpoint = await compactorOf(s1).compact();
  t.equal(checkpoint?.purgedTo, 0, 'checkpoint written, nothing purged');
  await roles.delete(ghost);
  // The holder dies after its purge and before deleting the blobs (done here by hand, as it would have done it).
  await jsm.streams.purge(STATE_STREAM, { seq: (checkpoint?.seq ?? 0) + 1 });
  await s1.server.stop();
  t.equal((await blobNames()).length, 2, 'the purged messages\' blobs are left behind');

  // A holder killed mid-upload leaves chunks no metadata names: of a checkpoint, and of a large message's blob.
  for (let i = 0; i < 3; i++) await js.publish(`$O.${CHECKPOINT_BUCKET}.C.cutoffcheckpoint`, randomBytes(CHUNK));
  for (let i = 0; i < 2; i++) await js.publish(`$O.${BLOB_BUCKET}.C.cutoffblob`, randomBytes(CHUNK));
  t.same((await uploads(nc, jsm, CHECKPOINT_BUCKET)).orphans, ['cutoffcheckpoint'], 'the checkpoint store holds a cut-off upload');
  t.same((await uploads(nc, jsm, BLOB_BUCKET)).orphans, ['cutoffblob'], 'the blob store holds a cut-off upload');

  // The next holder: a new node, rebuilt from the checkpoint.
  const s2 = await start('s2');
  const early = await compactorOf(s2).sweep();
  t.equal(early.young, 2, 'with the default grace, fresh cut-off uploads are left alone (they could be in progress)');
  t.equal(early.checkpointUploads + early.blobUploads, 0, 'nothing is swept yet');
  const second = await compactorOf(s2).compact();
  t.same(await blobNames(), [], 'its first run deletes the blobs the previous holder left (carried by the checkpoint)');
  const swept = await compactorOf(s2).sweep({ graceMs: 0 });
  t.match(swept, { checkpointUploads: 1, checkpointChunks: 3, blobUploads: 1, blobChunks: 2, blobsLeft: 0, young: 0 }, 'past the grace, both cut-off uploads are swept');
  t.equal(swept.bytes, 5 * CHUNK, `their bytes are counted (${swept.bytes})`);
  t.same((await uploads(nc, jsm, CHECKPOINT_BUCKET)).orphans, [], 'no orphan chunk is left in the checkpoint store');
  t.same((await uploads(nc, jsm, BLOB_BUCKET)).orphans, [], 'nor in the blob store');
  const listed = await listCheckpoints(await js.views.os(CHECKPOINT_BUCKET));
  t.same(listed.map((ref) => ref.seq), [second?.seq ?? checkpoint?.seq], 'the newest checkpoint stays');
  t.equal((await uploads(nc, jsm, CHECKPOINT_BUCKET)).all.length, 1, 'with its chunks');
  const metrics = await (await fetch(`${s2.url}/metrics`)).text();
  t.match(metrics, /^plait_cluster_swept_objects_total 4$/m, 'swept objects are counted (two blobs, two uploads)');
  const sweptBytes = Number(/^plait_cluster_swept_bytes_total (\d+)$/m.exec(metrics)?.[1]);
  t.ok(sweptBytes >= 2 * 1_100_000 + 5 * CHUNK && sweptBytes < 2 * 1_200_000 + 5 * CHUNK, `and their bytes (${sweptBytes}: two blobs of a little more than their row, five chunks)`);

  // The newest checkpoint still rebuilds a node to exactly the rows the others hold.
  await writeRow(s2, 'after', 1000);
  const s3 = await start('s3');
  for (const node of [s2, s3]) await node.server.cluster?.state.catchUp();
  const reference = rowsOf(s2);
  t.ok(reference.some((row) => row.includes('big-1')) && reference.some((row) => row.includes('after')), 'the rows from before the checkpoint and after it are there');
  t.same(rowsOf(s3), reference, 'a node rebuilt after the sweep holds exactly the same rows');
  for (const node of [s3, s2]) await node.server.stop();
});

t.test('an upload in progress is never swept: this holder\'s own checkpoint (the sweep waits for it) and another writer\'s (younger than the grace)', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  let pieces = 0;
  let paused: () => void = () => undefined;
  let release: () => void = () => undefined;
  const atPause = new Promise<void>((resolve) => (paused = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  let hold = false;
  // The checkpoint's second piece waits until the test lets it go: an upload in progress, its first chunks stored.
  const paced = async (): Promise<void> => {
    pieces++;
    if (hold && pieces === 2) {
      paused();
      await released;
    }
  };
  const start = (nodeId: string): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey, clusterCheckpointBytes: 0 }, `${root}/${nodeId}`, { autoDeliver: false, checkpointPaced: paced });
  const nc = await natsClient(t, nats.url);
  const jsm = await nc.jetstreamManager();
  const p1 = await start('p1');
  for (let i = 0; i < 4; i++) await writeRow(p1, `row-${i}`, 300_000);

  hold = true;
  const { stored } = await chunkStored(nc, CHECKPOINT_BUCKET);
  const order: string[] = [];
  const running = compactorOf(p1)
    .compact()
    .then((stats) => (order.push('checkpoint'), stats));
  await atPause;
  await stored;
  const inProgress = await uploads(nc, jsm, CHECKPOINT_BUCKET);
  t.equal(inProgress.orphans.length, 1, 'the checkpoint in progress has chunks and no metadata yet');
  const sweeping = compactorOf(p1)
    .sweep({ graceMs: 0 })
    .then((stats) => (order.push('sweep'), stats));
  release();
  const stats = await running;
  const swept = await sweeping;
  t.same(order, ['checkpoint', 'sweep'], 'the sweep waited for the checkpoint in progress (even with no grace)');
  t.equal(swept.checkpointUploads, 0, 'and swept none of it');
  t.same((await listCheckpoints(await nc.jetstream().views.os(CHECKPOINT_BUCKET))).map((ref) => ref.seq), [stats?.seq], 'the checkpoint completed');
  const p2 = await start('p2');
  for (const node of [p1, p2]) await node.server.cluster?.state.catchUp();
  t.same(rowsOf(p2), rowsOf(p1), 'and rebuilds a new node to the same rows');

  // Another writer's upload (a node's large message, or a former holder's checkpoint) stalled mid-way.
  const blobs = await nc.jetstream().views.os(BLOB_BUCKET);
  const data = randomBytes(3 * CHUNK);
  let go: () => void = () => undefined;
  const resumed = new Promise<void>((resolve) => (go = resolve));
  let part = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (part === 1) await resumed;
      if (part === 2) return controller.close();
      controller.enqueue(data.subarray(part * 2 * CHUNK, Math.min(data.length, (part + 1) * 2 * CHUNK)));
      part++;
    },
  });
  const { stored: blobStored } = await chunkStored(nc, BLOB_BUCKET);
  const upload = blobs.put({ name: 'other-node#1' }, body);
  await blobStored;
  t.equal((await uploads(nc, jsm, BLOB_BUCKET)).orphans.length, 1, 'the other writer\'s upload has chunks and no metadata yet');
  const during = await compactorOf(p1).sweep();
  t.equal(during.young, 1, 'the sweep sees it as young');
  t.equal(during.blobUploads, 0, 'and leaves it alone');
  go();
  await upload;
  const read = await blobs.getBlob('other-node#1');
  t.ok(read !== null && Buffer.from(read).equals(data), 'the upload completes whole (its digest checked on read)');
  for (const node of [p2, p1]) await node.server.stop();
});
