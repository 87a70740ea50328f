// Tests the worker role against a real nats-server: one holder among racing nodes, wake-ups to every node, hand-over on release, liveness.
import { connect, type NatsConnection } from 'nats';
import t from 'tap';
import { WorkerLease } from '../../src/cluster/worker-lease.js';
import { createLogger } from '../../src/log.js';
import type { WorkKind } from '../../src/worker-role.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';

const log = createLogger('error');

t.test('worker role', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const connections: NatsConnection[] = [];
  t.teardown(async () => {
    for (const nc of connections) await nc.close();
  });
  const node = async (nodeId: string): Promise<WorkerLease> => {
    const nc = await connect({ servers: nats.url, name: nodeId });
    connections.push(nc);
    const lease = await WorkerLease.start(nc, { nodeId, leaseMs: 3000, replicas: 1, log });
    t.teardown(() => lease.close());
    return lease;
  };

  // Three nodes starting at once race for the role: exactly one wins.
  const nodes = await Promise.all(['w1', 'w2', 'w3'].map((id) => node(id)));
  t.notOk(nodes.some((lease) => lease.held()), 'nobody holds it before it begins to compete');
  await Promise.all(nodes.map((lease) => lease.begin()));
  const holders = nodes.filter((lease) => lease.held());
  t.equal(holders.length, 1, 'exactly one of three racing nodes holds the role');
  const holder = holders[0] as WorkerLease;
  const others = nodes.filter((lease) => lease !== holder);

  // A wake-up published by any node reaches every node (the holder acts on it, the others ignore it).
  const heard = nodes.map((lease) => new Promise<WorkKind>((resolve) => lease.onWake(resolve)));
  (others[0] as WorkerLease).wake('outbox');
  t.same(await Promise.all(heard), ['outbox', 'outbox', 'outbox'], 'every node heard the wake-up');

  // Liveness: every running node is alive to the others; an unknown id is not.
  t.same(await Promise.all(nodes.map((lease) => holder.alive(lease.processId))), [true, true, true]);
  t.equal(await holder.alive('never-started'), false);

  // Release (graceful stop): the holder gives the role up and another node takes it at once, told by onChange.
  const taken = Promise.race(others.map((lease) => new Promise<WorkerLease>((resolve) => lease.onChange((held) => held && resolve(lease)))));
  const lost = new Promise<boolean>((resolve) => holder.onChange(resolve));
  await holder.close();
  t.equal(await lost, false, 'the old holder was told it lost the role');
  t.notOk(holder.held(), 'and no longer holds it');
  const next = await taken;
  t.ok(next.held(), 'another node took the role');
  t.equal(others.filter((lease) => lease.held()).length, 1, 'exactly one');
  t.equal(await next.alive(holder.processId), false, 'a closed node\'s liveness is gone at once');
});
