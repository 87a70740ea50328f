// Tests fencing on a real nats-server: an owner cut off from NATS whose writes land after a newer owner's claim changes no node's copy of the document.
import t, { type Test } from 'tap';
import type { ClusterState } from '../../src/cluster/state.js';
import { AppError } from '../../src/errors.js';
import type { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { partition } from '../helpers/partition.js';
import { openStateNode } from '../helpers/state-node.js';

interface Node {
  readonly store: Store;
  readonly state: ClusterState;
}

async function node(t: Test, url: string, nodeId: string, dataDir: string, owns: (document: string) => boolean = () => true): Promise<Node> {
  const opened = await openStateNode(url, nodeId, dataDir, { publishTimeoutMs: 500, owns });
  t.teardown(opened.stop);
  return opened;
}

const DOCUMENT = JSON.stringify(['key', 'org', 'doc']);
const row = (id: string): [string, string, string, string] => ['key', 'org', 'doc', id];

t.test('an old owner cut off from NATS: its writes that land after the new owner claimed are dropped on every node', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const proxy = await partition(t, nats.port);
  const root = t.testdir();
  let aOwns = true;
  const a = await node(t, `nats://127.0.0.1:${proxy.port}`, 'a', `${root}/a`, () => aOwns);
  const b = await node(t, nats.url, 'b', `${root}/b`);
  const c = await node(t, nats.url, 'c', `${root}/c`);
  const annotations = (n: Node) => n.store.records<string>(DB.annotations);
  const domains = (n: Node) => n.store.records<string>(DB.domains);

  // A owns the document (lease revision 1) and writes a row, acknowledged.
  await a.state.claimDocument(DOCUMENT, 1);
  await a.store.transaction(() => void annotations(a).put(row('x1'), 'a-before'));

  // The partition: A's writes commit in its cache but reach nobody; the client is told UNAVAILABLE.
  proxy.cut();
  const cutWrite = a.store.transaction(() => {
    void annotations(a).put(row('x1'), 'a-cut');
    void annotations(a).put(row('x2'), 'a-only');
    void domains(a).put(['k'], 'a-cut');
  });
  const refused = await cutWrite.then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(refused instanceof AppError && refused.status === 'UNAVAILABLE', 'the cut-off write is answered UNAVAILABLE');
  t.equal(annotations(a).get(row('x1')), 'a-cut', 'it committed in the old owner\'s cache');

  // A's lease lapses; B takes the document (revision 2), claims it on the stream and writes.
  aOwns = false;
  await b.state.claimDocument(DOCUMENT, 2);
  t.equal(annotations(b).get(row('x1')), 'a-before', 'the new owner loads every write the stream had');
  await b.store.transaction(() => {
    void annotations(b).put(row('x1'), 'b');
    void annotations(b).put(row('x3'), 'b-only');
  });

  // The heal: A's held and resent messages land after B's claim.
  proxy.heal();
  await a.state.acknowledged();
  for (const n of [a, b, c]) await n.state.catchUp();

  for (const [name, n] of [['b', b], ['c', c]] as const) {
    t.equal(annotations(n).get(row('x1')), 'b', `${name}: the new owner's row is kept`);
    t.equal(annotations(n).get(row('x3')), 'b-only', `${name}: the new owner's new row is there`);
    t.equal(annotations(n).get(row('x2')), undefined, `${name}: the old owner's fenced row is not applied`);
    t.equal(domains(n).get(['k']), 'a-cut', `${name}: a row outside the document is not fenced (last writer wins as before)`);
  }
  t.equal(annotations(a).get(row('x1')), 'b', "a: the new owner's write wins over the old owner's own pending one");
  t.equal(annotations(a).get(row('x3')), 'b-only', "a: the new owner's new row is there");
  t.equal(a.state.stats().diverged, 1, 'a: knows its cache of the document holds a fenced-off row');
  const reclaim = await a.state.claimDocument(DOCUMENT, 3).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(reclaim instanceof AppError && reclaim.status === 'UNAVAILABLE', 'a: refuses to serve the document from that cache again until rebuilt');
  t.equal(b.state.stats().diverged, 0, 'b: nothing diverged');
});

t.test('a claim that lands late for an older lease does not fence off the newer owner', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const proxy = await partition(t, nats.port);
  const root = t.testdir();
  const a = await node(t, `nats://127.0.0.1:${proxy.port}`, 'a', `${root}/a`);
  const b = await node(t, nats.url, 'b', `${root}/b`);
  // A's claim (revision 1) is held back and times out; B takes the lease (revision 2) and claims.
  proxy.cut();
  const late = a.state.claimDocument(DOCUMENT, 1).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok((await late) instanceof AppError, "a's claim is not acknowledged");
  await b.state.claimDocument(DOCUMENT, 2);
  proxy.heal();
  await a.state.acknowledged();
  await b.store.transaction(() => void b.store.records<string>(DB.annotations).put(row('y'), 'b'));
  await a.state.catchUp();
  t.equal(a.store.records<string>(DB.annotations).get(row('y')), 'b', "b's write after a's late claim is applied on a");
  t.equal(b.store.records<string>(DB.annotations).get(row('y')), 'b', 'and on b');
});
