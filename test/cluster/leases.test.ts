// Tests the document leases in a JetStream KV bucket against a real nats-server: one owner per document, release, lapse.
import fc from 'fast-check';
import { connect, type NatsConnection } from 'nats';
import t from 'tap';
import { Leases } from '../../src/cluster/leases.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';

const quiet = { warn: () => undefined, debug: () => undefined };

t.test('leases', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const connections: NatsConnection[] = [];
  t.teardown(async () => {
    for (const nc of connections) await nc.close();
  });
  const node = async (nodeId: string, now?: () => number): Promise<Leases> => {
    const nc = await connect({ servers: nats.url, name: nodeId });
    connections.push(nc);
    const leases = await Leases.open(nc, { nodeId, leaseMs: 10_000, log: quiet, ...(now === undefined ? {} : { now }) });
    t.teardown(() => leases.close());
    return leases;
  };

  await t.test('two and three nodes racing for many documents: exactly one owner each, and the others name it', async (t) => {
    const nodes = [await node('a'), await node('b'), await node('c')];
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 3 }),
        fc.array(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 90 }),
        async (count, ids, order) => {
          round++;
          const racing = nodes.slice(0, count);
          const documents = [...new Set(ids)].map((id) => `round ${round}/${id}`);
          // Every node claims every document, in an interleaving fast-check picks, all in flight at once.
          const claims = documents.flatMap((doc) => racing.map((leases) => ({ doc, leases })));
          const shuffled = claims.map((claim, i) => ({ claim, rank: order[i % order.length] ?? 0 })).sort((x, y) => x.rank - y.rank);
          const results = await Promise.all(shuffled.map(async ({ claim }) => ({ ...claim, result: await claim.leases.claim(claim.doc) })));
          for (const doc of documents) {
            const mine = results.filter((r) => r.doc === doc && r.result.mine);
            if (mine.length !== 1) return false;
            const owner = mine[0]?.leases.nodeId;
            for (const r of results.filter((r) => r.doc === doc && !r.result.mine)) if (r.result.mine || r.result.owner !== owner) return false;
            if (racing.filter((leases) => leases.owns(doc)).length !== 1) return false;
          }
          return true;
        },
      ),
      { numRuns: 25 },
    );
    t.pass('25 random races of 2-3 nodes over up to 30 documents each: one owner per document');
  });

  await t.test('a released lease is taken by the next node at once; renewals keep a held one', async (t) => {
    const [a, b] = [await node('r-a'), await node('r-b')];
    t.same(await a.claim('doc'), { mine: true });
    t.same(await b.claim('doc'), { mine: false, owner: 'r-a' });
    await a.renewAll();
    t.ok(a.owns('doc'), 'still held after a renewal');
    t.equal(await b.owner('doc'), 'r-a');
    await a.release('doc');
    t.notOk(a.owns('doc'));
    t.same(await b.claim('doc'), { mine: true }, 'the next node takes it');
    t.same(await a.claim('doc'), { mine: false, owner: 'r-b' });
  });

  await t.test("a dead owner's lease lapses: a taker past its expiry takes over, and the old holder learns it lost", async (t) => {
    let later = 0;
    const old = await node('l-old');
    const taker = await node('l-new', () => Date.now() + later);
    const lost: string[] = [];
    old.onLost((key) => lost.push(key));
    t.same(await old.claim('lapsing'), { mine: true });
    t.same(await taker.claim('lapsing'), { mine: false, owner: 'l-old' }, 'not before the lease time');
    later = 10_001;
    t.same(await taker.claim('lapsing'), { mine: true }, 'after it, compare-and-set on the lapsed revision');
    await old.renewAll();
    t.same(lost, ['lapsing'], 'the renewal is refused and the old holder is told');
    t.notOk(old.owns('lapsing'));
  });
});
