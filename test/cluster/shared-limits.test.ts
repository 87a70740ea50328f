// Tests the per-key limits over a cluster: what one node let a key take is taken from that key on the other nodes too.
import t from 'tap';
import type { Config } from '../../src/config.js';
import { startClusterNodes } from '../helpers/server.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { parseExposition, sampleValue } from '../helpers/prometheus.js';

async function metric(url: string, name: string): Promise<number> {
  return sampleValue(parseExposition(await (await fetch(`${url}/metrics`)).text()), name);
}

/** Scrapes until the node has applied a usage message it had not at `before`. */
async function usageArrived(url: string, before: number): Promise<void> {
  while ((await metric(url, 'plait_cluster_usage_messages_total')) <= before) await new Promise((resolve) => setImmediate(resolve));
}

/** The nodes tell their usage only when the test says (`tellLimits`), so what each has heard is known. */
const NEVER_ON_THEIR_OWN = 3_600_000;

t.test('an API key\'s request rate holds over two nodes, not once per node', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const node = (nodeId: string): Partial<Config> => ({ natsUrl: nats.url, nodeId, secretKey: 'c'.repeat(64), clusterLeaseMs: 3000, apiKeyRateLimitPerMinute: 10 });
  const [n1, n2] = await startClusterNodes(t, [node('n1'), node('n2')], t.testdir(), { usageIntervalMs: NEVER_ON_THEIR_OWN });
  if (n1 === undefined || n2 === undefined) throw new Error('two nodes');
  const credentials = await n1.api.createWorkspace();
  const call = (on: typeof n1) => on.api.call(credentials, '/v2/organizations/get', {});

  const before = await metric(n2.url, 'plait_cluster_usage_messages_total');
  const onN1 = [];
  for (let i = 0; i < 10; i++) onN1.push((await call(n1)).status);
  t.same(onN1, Array(10).fill(200), 'n1 lets the key take its 10 requests a minute');
  t.equal((await call(n1)).status, 429, 'and refuses the eleventh');
  t.equal((await call(n2)).status, 200, 'n2 has not heard of them yet: what a cluster lets through within one interval');
  t.equal(n1.server.cluster?.tellLimits(), true, 'n1 tells what it let through');
  await usageArrived(n2.url, before);
  const onN2 = await call(n2);
  t.equal(onN2.status, 429, 'n2, told what n1 let through, refuses too (before: n2 let through 10 more)');
  t.equal(onN2.body.error?.status, 'RESOURCE_EXHAUSTED');

  // Another key is untouched on either node.
  const other = await n2.api.createWorkspace();
  t.equal((await n2.api.call(other, '/v2/organizations/get', {})).status, 200, 'another key still has its own rate');
  // Stopped while NATS is up: teardown stops NATS first, and the nodes would wait out their release timeouts.
  await Promise.all([n1.server.stop(), n2.server.stop()]);
});
