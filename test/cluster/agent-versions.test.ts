// Tests agent version numbers across nodes on a real nats-server: edits of one agent racing on two nodes never write the same version key.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { AgentDefinitions } from '../../src/agents/definitions.js';
import { Secrets } from '../../src/auth/secrets.js';
import { KvAgentVersions } from '../../src/cluster/agent-versions.js';
import type { ClusterState } from '../../src/cluster/state.js';
import { createLogger } from '../../src/log.js';
import { natsOrSkip, startNats } from '../helpers/nats.js';
import { openStateNode } from '../helpers/state-node.js';

interface Node {
  readonly state: ClusterState;
  readonly agents: AgentDefinitions;
}

async function node(t: Test, url: string, dataDir: string, secretKey: string): Promise<Node> {
  const { nc, store, state, stop } = await openStateNode(url, dataDir, dataDir);
  t.teardown(stop);
  const agents = new AgentDefinitions(store, Secrets.load(dataDir, secretKey), Date.now, await KvAgentVersions.open(nc, { log: createLogger('silent') }));
  return { state, agents };
}

const behaviour = {
  name: 'Tone checker',
  description: 'Checks the tone',
  enabled: true,
  instructions: 'Find rude sentences.',
  contextGathering: { strategies: ['web-page-text'] },
  execution: {},
};

t.test('two nodes editing one agent at once get different versions, and both versions are kept on every node', async (t) => {
  const bin = natsOrSkip(t);
  if (bin === undefined) return;
  const nats = await startNats(t, bin);
  const root = t.testdir();
  const secretKey = randomBytes(32).toString('hex');
  const a = await node(t, nats.url, `${root}/a`, secretKey);
  const b = await node(t, nats.url, `${root}/b`, secretKey);
  const { agentId } = await a.agents.create('key', behaviour);
  await b.state.catchUp();
  const rounds = 20;
  const seen: number[] = [];
  let bothWrote = 0;
  for (let round = 0; round < rounds; round++) {
    // Both nodes read the same current version from their caches and write at once. One may be told ABORTED (the
    // other's write reached its cache first, as on one node); the key guarantee is that no version is written twice.
    const results = await Promise.allSettled([
      a.agents.updateBehaviour('key', agentId, { instructions: `a${round}` }),
      b.agents.updateBehaviour('key', agentId, { instructions: `b${round}` }),
    ]);
    const versions = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.version] : []));
    for (const result of results) if (result.status === 'rejected') t.match(result.reason, { status: 'ABORTED' }, `round ${round}: a stale edit is ABORTED`);
    t.ok(versions.length >= 1, `round ${round}: at least one edit is written`);
    if (versions.length === 2) {
      bothWrote++;
      t.not(versions[0], versions[1], `round ${round}: both written, as versions ${versions[0]} and ${versions[1]}`);
    }
    seen.push(...versions);
    await a.state.catchUp();
    await b.state.catchUp();
  }
  t.ok(bothWrote > 0, `in ${bothWrote} of ${rounds} rounds both nodes wrote a version at once (the race this guards)`);
  const listed = (n: Node): number[] => n.agents.listVersions('key', agentId).map((row) => row['version'] as number).sort((x, y) => x - y);
  const expected = [1, ...seen].sort((x, y) => x - y);
  t.same(listed(a), expected, 'a holds every version written, none overwritten');
  t.same(listed(b), expected, 'b holds the same');
  const instructions = (n: Node, version: number): unknown => n.agents.listVersions('key', agentId).find((row) => row['version'] === version)?.['instructions'];
  for (const version of seen) t.equal(instructions(a, version), instructions(b, version), `version ${version} reads the same on both nodes`);
});
