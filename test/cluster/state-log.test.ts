// Tests the replicated write log on a real nats-server: concurrent writes of one key converge to the stream's order on every node, and a message over the payload limit goes through the object store.
import t, { type Test } from 'tap';
import type { ClusterState } from '../../src/cluster/state.js';
import type { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { openStateNode } from '../helpers/state-node.js';

interface Node {
  readonly store: Store;
  readonly state: ClusterState;
}

async function node(t: Test, url: string, nodeId: string, dataDir: string): Promise<Node> {
  const opened = await openStateNode(url, nodeId, dataDir);
  t.teardown(opened.stop);
  return opened;
}

t.test('two nodes writing one key at once end with the same value: the last in the stream', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const a = await node(t, nats.url, 'a', `${root}/a`);
  const b = await node(t, nats.url, 'b', `${root}/b`);
  const dbA = a.store.records<string>(DB.domains);
  const dbB = b.store.records<string>(DB.domains);
  const writes: Array<Promise<void>> = [];
  for (let round = 0; round < 50; round++) {
    // Both nodes write the same keys in the same turn, so their messages interleave in the stream.
    for (const key of ['k1', 'k2', 'k3']) {
      writes.push(a.store.transaction(() => void dbA.put([key], `a${round}`)));
      writes.push(b.store.transaction(() => void dbB.put([key], `b${round}`)));
    }
    a.store.transactionGrouped({ write: () => void dbA.put(['k1'], `ga${round}`), settle: () => undefined });
    b.store.transactionGrouped({ write: () => void dbB.put(['k1'], `gb${round}`), settle: () => undefined });
  }
  await Promise.all(writes);
  await Promise.all([a.store.group.settled(), b.store.group.settled()]);
  await a.state.catchUp();
  await b.state.catchUp();
  for (const key of ['k1', 'k2', 'k3']) t.equal(dbA.get([key]), dbB.get([key]), `${key}: both caches hold ${String(dbA.get([key]))}`);
  t.equal(a.state.position, b.state.position, 'both applied the whole stream');
});

t.test('a transaction larger than the payload limit travels through the object store', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const a = await node(t, nats.url, 'a', `${root}/a`);
  const b = await node(t, nats.url, 'b', `${root}/b`);
  const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
  await a.store.transaction(() => void a.store.binary(DB.docSnapshots).put(['key', 'org', 'doc', 'main'], big));
  await b.state.catchUp();
  const copied = b.store.binary(DB.docSnapshots).get(['key', 'org', 'doc', 'main']);
  t.equal(copied?.length, big.length, 'the 3 MB snapshot reached the other node');
  t.ok(copied !== undefined && Buffer.from(copied).equals(Buffer.from(big)), 'byte for byte');
});
