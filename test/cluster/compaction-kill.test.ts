// Tests SIGKILL of the node writing a checkpoint, mid-upload: the previous checkpoint stays the newest and usable, the cut-off upload's chunks are swept, and another node compacts after it.
import { randomBytes } from 'node:crypto';
import { connect, consumerOpts } from 'nats';
import t from 'tap';
import { CHECKPOINT_BUCKET, listCheckpoints } from '../../src/cluster/checkpoint.js';
import { STATE_STREAM } from '../../src/cluster/state-message.js';
import { DB } from '../../src/store/keys.js';
import type { ReplicatedOp } from '../../src/store/replication.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { startServerProcess } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const secretKey = 'f'.repeat(64);

async function writeRows(node: TestServer, prefix: string, count: number, bytes: number): Promise<void> {
  const store = node.server.services.store;
  for (let i = 0; i < count; i++) await store.transaction(() => void store.binary(DB.docUpdates).put(['compaction-kill', prefix, i], randomBytes(bytes)));
}

const rowsOf = (node: TestServer): string[] =>
  [...node.server.services.store.replicatedRows()].map((row: ReplicatedOp) => JSON.stringify([row[0], row[1], row[2] instanceof Uint8Array ? Buffer.from(row[2]).toString('base64') : row[2]]));

t.test('SIGKILL the worker-role holder while it uploads a checkpoint: the previous one stays usable, the cut-off chunks are swept; another node compacts after it', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const threshold = 4 * 1024 * 1024;
  // The holder is a process of its own (started first, alone, it takes the worker role) so it can be SIGKILLed.
  const holder = await startServerProcess(t, {
    DATA_DIR: `${root}/h1`,
    NATS_URL: nats.url,
    SECRET_KEY: secretKey,
    NODE_ID: 'h1',
    CLUSTER_LEASE_MS: '2000',
    CLUSTER_CHECKPOINT_BYTES: String(threshold),
    DEV_BOOTSTRAP: 'false',
    LOG_LEVEL: 'info',
  });
  /** Resolves at the holder's `count`-th log line matching `pattern` (counted over all its output). */
  const logged = (pattern: RegExp, count: number): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if ((holder.stdout().match(new RegExp(pattern.source, 'g')) ?? []).length < count) return;
        holder.child.stdout.off('data', check);
        resolve();
      };
      holder.child.stdout.on('data', check);
      check();
    });
  const config = { natsUrl: nats.url, secretKey, clusterLeaseMs: 2000, clusterCheckpointBytes: 0 };
  const w = await startTestServer(t, { ...config, nodeId: 'w1' }, `${root}/w1`, { autoDeliver: false });
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const os = await nc.jetstream().views.os(CHECKPOINT_BUCKET);
  const jsm = await nc.jetstreamManager();

  // Past the threshold: the holder's periodic check writes the first checkpoint.
  const first = logged(/state checkpoint written/, 1);
  await writeRows(w, 'a', 10, 500_000);
  await first;
  const [previous] = await listCheckpoints(os);
  t.ok(previous !== undefined, `the holder wrote a checkpoint by itself (at ${previous?.seq ?? 0})`);

  // Past it again: SIGKILL the holder as soon as the stream stores the first chunk of its next upload (~15 MB follow).
  // An ordered consumer sees only stored messages, and only those published after it started.
  const options = consumerOpts();
  options.orderedConsumer();
  options.deliverNew();
  const chunks = await nc.jetstream().subscribe(`$O.${CHECKPOINT_BUCKET}.C.>`, options);
  await writeRows(w, 'b', 20, 500_000);
  for await (const chunk of chunks) {
    void chunk;
    break;
  }
  holder.child.kill('SIGKILL');
  chunks.unsubscribe();
  await holder.exited;
  t.match(holder.stdout(), /passed its checkpoint threshold: compacting/, 'the holder was compacting');
  const after = await listCheckpoints(os);
  t.same(after.map((ref) => ref.seq), [previous?.seq], 'the cut-off checkpoint is not listed; the previous one is the newest');
  t.ok((await jsm.streams.info(STATE_STREAM)).state.first_seq <= (previous?.seq ?? 0) + 1, 'the stream is not purged past it');

  // A new node rebuilds from the previous checkpoint and the stream after it.
  const fresh = await startTestServer(t, { ...config, nodeId: 'n1' }, `${root}/n1`, { autoDeliver: false });
  for (const node of [w, fresh]) await node.server.cluster?.state.catchUp();
  const reference = rowsOf(w);
  t.ok(reference.length >= 30, `the writer's cache has the rows (${reference.length})`);
  t.same(rowsOf(fresh), reference, 'the new node holds exactly the writer\'s rows');

  // The cut-off upload's chunks: named by no metadata, swept by the next holder (here by hand, without the grace that
  // keeps the sweep from an upload that may still be in progress).
  const prefix = `$O.${CHECKPOINT_BUCKET}.C.`;
  const orphans = async (): Promise<string[]> => {
    const subjects = (await jsm.streams.info(`OBJ_${CHECKPOINT_BUCKET}`, { subjects_filter: `${prefix}>` })).state.subjects ?? {};
    const live = new Set((await os.list()).map((info) => info.nuid));
    return Object.keys(subjects).filter((subject) => !live.has(subject.slice(prefix.length)));
  };
  t.equal((await orphans()).length, 1, 'the cut-off upload left chunks that no metadata names');
  const sweeper = w.server.cluster?.state.compactor;
  const swept = await sweeper?.sweep({ graceMs: 0 });
  t.equal(swept?.checkpointUploads, 1, `the sweep removes them (${swept?.checkpointChunks ?? 0} chunks, ${swept?.bytes ?? 0} bytes)`);
  t.same(await orphans(), [], 'none is left');
  t.same((await listCheckpoints(os)).map((ref) => ref.seq), [previous?.seq], 'the previous checkpoint is untouched');

  // Another node (its scratch store empty) compacts from the previous checkpoint and the stream: a new one replaces it.
  const next = await w.server.cluster?.state.compactor?.compact();
  t.ok(next !== undefined && next.seq > (previous?.seq ?? 0), 'the next compaction completes');
  t.same((await listCheckpoints(os)).map((ref) => ref.seq), [next?.seq], 'and replaces the previous checkpoint');
  const rebuilt = await startTestServer(t, { ...config, nodeId: 'n2' }, `${root}/n2`, { autoDeliver: false });
  await rebuilt.server.cluster?.state.catchUp();
  t.same(rowsOf(rebuilt), rowsOf(w), 'a node rebuilt from it after the sweep holds exactly the writer\'s rows');
  await rebuilt.server.stop();
  await fresh.server.stop();
  await w.server.stop();
});
