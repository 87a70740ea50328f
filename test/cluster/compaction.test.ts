// Tests compaction of the state log: a checkpoint, the purge of the stream and of purged messages' blobs, and rebuilds from the checkpoint (a new node, a wiped cache, a node away across the purge, a checkpoint cut off half-way).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { connect, type NatsConnection } from 'nats';
import t, { type Test } from 'tap';
import { CHECKPOINT_BUCKET, listCheckpoints } from '../../src/cluster/checkpoint.js';
import { ClaimTable } from '../../src/cluster/fence.js';
import { leaseKey, ROLE_BUCKET } from '../../src/cluster/leases.js';
import { nodeLivenessKey } from '../../src/cluster/worker-lease.js';
import { BLOB_BUCKET, STATE_STREAM } from '../../src/cluster/state-message.js';
import { DB } from '../../src/store/keys.js';
import type { ReplicatedOp } from '../../src/store/replication.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const secretKey = 'd'.repeat(64);
const comment = (documentId: string, annotationId: string, text: string): unknown => ({
  organizationId: 'org-compact',
  documentId,
  commentAnnotations: [{ annotationId, commentData: [{ commentText: text, from: { userId: 'alice', name: 'Alice', email: 'alice@example.com' } }] }],
});

const clusterOf = (node: TestServer) => {
  const cluster = node.server.cluster;
  if (cluster === undefined) throw new Error('a cluster node');
  return cluster;
};

/** A write through the store of `node` (a row no operation reads): `bytes` large makes its stream message go to the blob store. */
async function writeRow(node: TestServer, id: string, bytes: number): Promise<void> {
  const store = node.server.services.store;
  await store.transaction(() => void store.binary(DB.docUpdates).put(['compaction-test', id], randomBytes(bytes)));
}

/** Every replicated row of a node's cache, in a comparable form. */
function rowsOf(node: TestServer): string[] {
  return [...node.server.services.store.replicatedRows()].map((row: ReplicatedOp) => JSON.stringify([row[0], row[1], row[2] instanceof Uint8Array ? Buffer.from(row[2]).toString('base64') : row[2]]));
}

async function natsClient(t: Test, url: string): Promise<NatsConnection> {
  const nc = await connect({ servers: url });
  t.teardown(() => nc.close());
  return nc;
}

async function blobNames(nc: NatsConnection): Promise<string[]> {
  const os = await nc.jetstream().views.os(BLOB_BUCKET);
  return (await os.list()).filter((info) => !info.deleted).map((info) => info.name);
}

/** Brings every node up to the stream's last message, then compares each one's rows with the first's. */
async function sameRows(t: Test, nodes: readonly TestServer[], what: string): Promise<void> {
  for (const node of nodes) await clusterOf(node).state.catchUp();
  const [first, ...rest] = nodes;
  if (first === undefined) throw new Error('nodes');
  const reference = rowsOf(first);
  t.ok(reference.length > 0, `${what}: the reference cache has rows (${reference.length})`);
  for (const node of rest) t.same(rowsOf(node), reference, `${what}: ${node.config.nodeId ?? ''} holds exactly the rows of ${first.config.nodeId ?? ''}`);
}

t.test('checkpoint and purge; a new node, a wiped cache and a node away across the purge rebuild to the same rows', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  // Compaction by hand (CLUSTER_CHECKPOINT_BYTES 0), the outbox unread (no background writes between comparisons).
  const start = (nodeId: string, dir = nodeId): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey, clusterCheckpointBytes: 0 }, `${root}/${dir}`, { autoDeliver: false });
  const c1 = await start('c1');
  const c2 = await start('c2');
  const c3 = await start('c3');
  const nc = await natsClient(t, nats.url);
  const jsm = await nc.jetstreamManager();

  const credentials = await c1.api.createWorkspace();
  for (const [i, node] of [c1, c2, c3].entries()) {
    t.equal((await node.api.call(credentials, '/v2/commentannotations/add', comment(`doc-${i}`, `a${i}`, `written on c${i + 1}`))).status, 200);
  }
  await writeRow(c2, 'big-before', 1_100_000);
  const blobsBefore = await blobNames(nc);
  t.equal(blobsBefore.length, 1, 'the large write went to the blob store');
  // c3 stops cleanly and misses everything from here on, the purge included.
  await clusterOf(c3).state.catchUp();
  await c3.server.stop();
  t.equal((await c2.api.call(credentials, '/v2/commentannotations/add', comment('doc-late', 'late', 'after c3 left'))).status, 200);
  await writeRow(c1, 'small', 1000);

  await clusterOf(c1).state.catchUp();
  const lastBefore = (await jsm.streams.info(STATE_STREAM)).state.last_seq;
  const stats = await clusterOf(c1).state.compactor?.compact();
  t.ok(stats !== undefined, 'a checkpoint was written');
  t.equal(stats?.seq, lastBefore, 'at the stream\'s last sequence');
  t.equal(stats?.purgedTo, lastBefore, 'and the stream purged up to it (every live node had applied it)');
  const info = (await jsm.streams.info(STATE_STREAM)).state;
  t.equal(info.first_seq, lastBefore + 1, 'the stream starts after the checkpoint');
  t.equal(info.messages, 0, 'no message is left');
  t.same(await blobNames(nc), [], 'the purged message\'s blob is deleted');
  const checkpoints = await listCheckpoints(await nc.jetstream().views.os(CHECKPOINT_BUCKET));
  t.same(checkpoints.map((ref) => ref.seq), [lastBefore], 'one complete checkpoint');
  t.equal(await clusterOf(c1).state.compactor?.compact(), undefined, 'nothing new: no second checkpoint');

  // After the checkpoint: a large write whose message stays in the stream keeps its blob.
  await writeRow(c2, 'big-after', 1_100_000);
  t.equal((await blobNames(nc)).length, 1, 'a blob of a message after the checkpoint stays');

  // c3 was away across the purge: it rebuilds from the checkpoint, then applies the rest.
  const back = await start('c3');
  // A new node, and c2 with its DATA_DIR wiped.
  const c4 = await start('c4');
  await c2.server.stop();
  rmSync(`${root}/c2`, { recursive: true, force: true });
  const wiped = await start('c2');
  await sameRows(t, [c1, back, c4, wiped], 'after the purge');
  // The applier's fold state travels with the checkpoint: a rebuilt node knows every document's newest claim (else
  // it would apply an old owner's fenced write that the others dropped).
  const claimsOf = (node: TestServer): string => JSON.stringify(ClaimTable.stored(node.server.services.store.records<unknown>(DB.meta)));
  const claims = ClaimTable.stored(c1.server.services.store.records<unknown>(DB.meta));
  t.ok(claims.length >= 4, `the documents written before the checkpoint were claimed (${claims.length} claims)`);
  for (const node of [back, c4, wiped]) t.equal(claimsOf(node), claimsOf(c1), `${node.config.nodeId ?? ''} rebuilt with the same newest claims as c1`);
  const read = await c4.api.call(credentials, '/v2/commentannotations/get', { organizationId: 'org-compact', documentId: 'doc-late' });
  t.match(JSON.stringify(read.body), /after c3 left/, 'a comment written before the checkpoint is served by the new node');

  const metrics = await (await fetch(`${c1.url}/metrics`)).text();
  t.match(metrics, new RegExp(`^plait_cluster_checkpoint_seq ${lastBefore}$`, 'm'), 'the checkpoint\'s sequence is a gauge');
  t.match(metrics, /^plait_cluster_checkpoint_bytes [1-9]\d*$/m, 'and its size');
  for (const node of [wiped, c4, back, c1]) await node.server.stop();
});

t.test('a checkpoint cut off half-way leaves the previous one in use; the next run completes', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  let cut: (() => void) | undefined;
  let pieces = 0;
  // The upload's second piece fails, as when the writer dies mid-upload: chunks without the object's metadata.
  const paced = async (): Promise<void> => {
    pieces++;
    if (cut !== undefined && pieces === 2) {
      cut();
      throw new Error('the checkpointing node died');
    }
  };
  const start = (nodeId: string): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey, clusterCheckpointBytes: 0 }, `${root}/${nodeId}`, { autoDeliver: false, checkpointPaced: paced });
  const k1 = await start('k1');
  const nc = await natsClient(t, nats.url);
  const jsm = await nc.jetstreamManager();
  await writeRow(k1, 'one', 300_000);
  const first = await clusterOf(k1).state.compactor?.compact();
  t.ok(first !== undefined, 'the first checkpoint');
  for (let i = 0; i < 4; i++) await writeRow(k1, `more-${i}`, 300_000);
  const lastSeq = (await jsm.streams.info(STATE_STREAM)).state.last_seq;

  pieces = 0;
  const cutOff = new Promise<void>((resolve) => (cut = resolve));
  const failed = clusterOf(k1).state.compactor?.compact();
  await cutOff;
  await t.rejects(failed ?? Promise.reject(new Error('no compactor')), /died/, 'the cut-off checkpoint fails');
  cut = undefined;
  const os = await nc.jetstream().views.os(CHECKPOINT_BUCKET);
  t.same((await listCheckpoints(os)).map((ref) => ref.seq), [first?.seq], 'only the previous checkpoint is listed');
  t.equal((await jsm.streams.info(STATE_STREAM)).state.first_seq, (first?.seq ?? 0) + 1, 'nothing after it was purged');

  // A new node rebuilds from the previous checkpoint and the stream after it.
  const k2 = await start('k2');
  await sameRows(t, [k1, k2], 'rebuilt from the previous checkpoint');
  const second = await clusterOf(k2).state.compactor?.compact();
  t.equal(second?.seq, lastSeq, 'the next checkpoint completes (here on the other node, as after a worker-role move)');
  t.same((await listCheckpoints(os)).map((ref) => ref.seq), [lastSeq], 'and replaces the previous one');
  const k3 = await start('k3');
  await sameRows(t, [k1, k2, k3], 'rebuilt from the new checkpoint');
  for (const node of [k3, k2, k1]) await node.server.stop();
});

t.test('past CLUSTER_CHECKPOINT_BYTES the worker-role holder compacts by itself, and only it', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const start = (nodeId: string): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey, clusterCheckpointBytes: 256 * 1024 }, `${root}/${nodeId}`, { autoDeliver: false });
  const nodes = [await start('t1'), await start('t2')];
  const seen: string[] = [];
  const done = new Promise<void>((resolve) => {
    for (const node of nodes) {
      clusterOf(node).state.compactor?.onCheckpoint(() => {
        seen.push(`${node.config.nodeId ?? ''}${clusterOf(node).worker.held() ? ' (holder)' : ''}`);
        resolve();
      });
    }
  });
  // Below the threshold nothing happens on either node.
  for (const node of nodes) await clusterOf(node).state.compactor?.tick();
  t.same(seen, [], 'no checkpoint below the threshold');
  for (let i = 0; i < 4; i++) {
    const node = nodes[i % 2];
    if (node !== undefined) await writeRow(node, `grow-${i}`, 100_000);
  }
  // The non-holder's check past the threshold does nothing; the holder's own periodic check compacts.
  for (const node of nodes) if (!clusterOf(node).worker.held()) await clusterOf(node).state.compactor?.tick();
  await done;
  t.equal(seen.length, 1, 'one checkpoint');
  t.match(seen[0], /\(holder\)$/, `written by the worker-role holder (${seen[0] ?? ''})`);
  for (const node of nodes) await node.server.stop();
});

t.test('the purge waits for every live node; a cache behind the stream with no checkpoint covering the gap is refused, not applied with a gap', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const start = (nodeId: string): Promise<TestServer> =>
    startTestServer(t, { natsUrl: nats.url, nodeId, secretKey, clusterCheckpointBytes: 0 }, `${root}/${nodeId}`, { autoDeliver: false });
  const g1 = await start('g1');
  const nc = await natsClient(t, nats.url);
  const jsm = await nc.jetstreamManager();
  await writeRow(g1, 'one', 1000);
  // A live node that never answers how far it applied (its liveness key held, no applier): the purge must not pass it.
  const roles = await nc.jetstream().views.kv(ROLE_BUCKET);
  const ghost = leaseKey(nodeLivenessKey('ghost'));
  await roles.put(ghost, JSON.stringify({ node: 'ghost', expiresAt: Date.now() + 600_000 }));
  const skipped = await clusterOf(g1).state.compactor?.compact();
  t.equal(skipped?.purgedTo, 0, 'the checkpoint is written but nothing is purged');
  t.equal((await jsm.streams.info(STATE_STREAM)).state.first_seq, 1, 'the stream still starts at 1');
  await roles.delete(ghost);
  await writeRow(g1, 'two', 1000);
  const purged = await clusterOf(g1).state.compactor?.compact();
  t.ok((purged?.purgedTo ?? 0) > 0, 'once it is gone, the next run purges');
  await g1.server.stop();

  // The stream purged past every checkpoint (by hand): a new node refuses to start rather than apply with a gap.
  await writeRow(await start('g2'), 'three', 1000).then(() => undefined);
  const last = (await jsm.streams.info(STATE_STREAM)).state.last_seq;
  await jsm.streams.purge(STATE_STREAM, { seq: last + 1 });
  await t.rejects(start('g3'), /no checkpoint covers what came before/, 'a cache that cannot be rebuilt without a gap is refused');
});
