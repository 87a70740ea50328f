// Tests the applier's state across a restart on a real nats-server: an origin's open gap and a document's newest claim are kept with the position.
import { connect, type NatsConnection } from 'nats';
import { pack } from 'msgpackr';
import t, { type Test } from 'tap';
import { STATE_SUBJECT, type ClusterState } from '../../src/cluster/state.js';
import type { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';
import type { ReplicatedOp } from '../../src/store/replication.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { openStateNode } from '../helpers/state-node.js';

interface Node {
  readonly store: Store;
  readonly state: ClusterState;
  stop(): Promise<void>;
}

async function node(url: string, dataDir: string): Promise<Node> {
  const { store, state, stop } = await openStateNode(url, 'n', dataDir);
  return {
    store,
    state,
    stop,
  };
}

/** Another node's message, written to the stream as ClusterState writes it (origin, counter, ops, fence or claim). */
async function send(t: Test, nc: NatsConnection, message: Record<string, unknown>): Promise<void> {
  const ack = await nc.jetstream().publish(STATE_SUBJECT, pack(message));
  t.ok(ack.seq > 0);
}

t.test('a restart in the middle of a gap, and after a claim, keeps both', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const dir = `${t.testdir()}/n`;
  const writer = await connect({ servers: nats.url });
  t.teardown(() => writer.close());
  const doc = ['key', 'org', 'doc'];
  const document = JSON.stringify(doc);
  const domain = (value: string): ReplicatedOp => ['domains', ['k'], value];
  const note = (id: string, value: string): ReplicatedOp => ['annotations', [...doc, id], value];

  let n = await node(nats.url, dir);
  // Origin x: message 1, then 3 (2 is missing: the gap opens), and a claim of the document by origin y at lease revision 5.
  await send(t, writer, { o: 'x/1', n: 1, ops: [domain('x1')] });
  await send(t, writer, { o: 'x/1', n: 3, ops: [domain('x3')] });
  await send(t, writer, { o: 'y/1', n: 1, c: document, r: 5 });
  await n.state.catchUp();
  t.equal(n.store.records<string>(DB.domains).get(['k']), 'x3');
  await n.stop();

  n = await node(nats.url, dir);
  t.teardown(() => n.stop());
  // The late message 2 lands after the restart; x's write of the document fenced with an epoch before y's claim too.
  await send(t, writer, { o: 'x/1', n: 2, ops: [domain('x2'), note('a', 'x2')] });
  await send(t, writer, { o: 'x/1', n: 4, ops: [note('b', 'old-owner')], f: { [document]: 1 } });
  await n.state.catchUp();
  t.equal(n.store.records<string>(DB.domains).get(['k']), 'x3', 'the late message does not undo the later write after a restart');
  t.equal(n.store.records<string>(DB.annotations).get([...doc, 'a']), 'x2', 'its other keys apply');
  t.equal(n.store.records<string>(DB.annotations).get([...doc, 'b']), undefined, 'the claim stored before the restart still fences the older epoch');
  t.equal(n.state.stats().lag, 0, 'caught up: no lag');
});
