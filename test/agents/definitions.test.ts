// Tests agent definitions over REST: every rule of Create Agent (spec 4.20) and Get Agent(s) (4.14), versions, delete, secrets.
import t, { type Test } from 'tap';
import { dataOf, directoryFixture, expectError, type DirectoryFixture } from '../helpers/directory.js';

const base = {
  name: 'Tone checker',
  description: 'Checks the tone of the page',
  enabled: true,
  instructions: 'Find sentences that sound rude.',
  contextGathering: { strategies: ['web-page-text'] },
  execution: {},
};

async function create(f: DirectoryFixture, body: Record<string, unknown> = base): Promise<string> {
  const res = await f.call<{ agentId: string; version: number }>('/v2/agents/create', body);
  return dataOf(t, res).agentId;
}

const without = (key: string): Record<string, unknown> => Object.fromEntries(Object.entries(base).filter(([k]) => k !== key));

let fixture: Promise<DirectoryFixture> | undefined;
const shared = (tt: Test): Promise<DirectoryFixture> => (fixture ??= directoryFixture(t)).then((f) => (tt.ok(f), f));

t.test('create writes version 1 and get merges identity with the version behaviour', async (t) => {
  const f = await shared(t);
  const res = await f.call<{ agentId: string; version: number }>('/v2/agents/create', base);
  t.equal(dataOf(t, res).version, 1);
  const got = await f.call<{ agent: Record<string, unknown> }>('/v2/agents/get', { agentId: dataOf(t, res).agentId });
  t.match(dataOf(t, got).agent, { ...base, managedBy: 'customer', system: false, version: 1 });
});

for (const field of ['name', 'description', 'enabled', 'contextGathering', 'execution']) {
  t.test(`create refuses a body without ${field}`, async (t) => {
    const f = await shared(t);
    expectError(t, await f.call('/v2/agents/create', without(field)), 'INVALID_ARGUMENT', new RegExp(`data\\.${field} is required`));
  });
}

t.test('create refuses an empty name and an empty description', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, name: '' }), 'INVALID_ARGUMENT', /data\.name must not be empty/);
  expectError(t, await f.call('/v2/agents/create', { ...base, description: '' }), 'INVALID_ARGUMENT', /data\.description must not be empty/);
});

t.test('create refuses a non-boolean enabled', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, enabled: 'yes' }), 'INVALID_ARGUMENT', /data\.enabled must be a boolean/);
});

t.test('create refuses an empty strategies list and an unknown strategy', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, contextGathering: { strategies: [] } }), 'INVALID_ARGUMENT', /data\.contextGathering\.strategies must have at least 1/);
  expectError(t, await f.call('/v2/agents/create', { ...base, contextGathering: { strategies: ['telepathy'] } }), 'INVALID_ARGUMENT', /data\.contextGathering\.strategies\[0\] must be one of/);
});

t.test('instructions are required for the default ai strategy', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', without('instructions')), 'INVALID_ARGUMENT', /data\.instructions is required when execution\.executionStrategy is "ai"/);
});

for (const strategy of ['service+ai', 'browser-agent', 'mcp-tools']) {
  t.test(`instructions are required for ${strategy}`, async (t) => {
    const f = await shared(t);
    const execution = { executionStrategy: strategy, serviceId: 'broken-links', mcpServers: [{ url: 'http://127.0.0.1:1/mcp' }] };
    expectError(t, await f.call('/v2/agents/create', { ...without('instructions'), execution }), 'INVALID_ARGUMENT', /data\.instructions is required/);
  });
}

t.test('a pure service agent may omit instructions', async (t) => {
  const f = await shared(t);
  await create(f, { ...without('instructions'), execution: { executionStrategy: 'service', serviceId: 'broken-links' } });
});

for (const strategy of ['service', 'service+ai']) {
  t.test(`serviceId is required for ${strategy}`, async (t) => {
    const f = await shared(t);
    expectError(t, await f.call('/v2/agents/create', { ...base, execution: { executionStrategy: strategy } }), 'INVALID_ARGUMENT', /data\.execution\.serviceId is required/);
  });
}

t.test('serviceId must be a known service', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, execution: { executionStrategy: 'service', serviceId: 'readability' } }), 'INVALID_ARGUMENT', /data\.execution\.serviceId must be one of/);
});

t.test('mcp-tools needs at least one mcpServers entry', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, execution: { executionStrategy: 'mcp-tools' } }), 'INVALID_ARGUMENT', /data\.execution\.mcpServers needs at least 1 entry/);
  expectError(t, await f.call('/v2/agents/create', { ...base, execution: { executionStrategy: 'mcp-tools', mcpServers: [] } }), 'INVALID_ARGUMENT', /mcpServers needs at least 1 entry/);
});

t.test("rest-api needs strategyOptions['rest-api']", async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, contextGathering: { strategies: ['rest-api'] } }), 'INVALID_ARGUMENT', /strategyOptions\['rest-api'\] is required/);
});

t.test('unknown postProcess keys are refused, known ones accepted (matchAndMerge deprecated but accepted)', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, postProcess: { dedupe: { enabled: true } } }), 'INVALID_ARGUMENT', /data\.postProcess\.dedupe is not an accepted field/);
  await create(f, { ...base, postProcess: { guardrails: { enabled: false }, annotations: { strategy: 'page-level' }, matchAndMerge: { enabled: true }, customProcessors: [] } });
});

t.test('postProcess.annotations.strategy must be a known strategy', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, postProcess: { annotations: { strategy: 'sentence' } } }), 'INVALID_ARGUMENT', /data\.postProcess\.annotations\.strategy must be one of/);
});

t.test('unknown extra behavioural fields are accepted and kept', async (t) => {
  const f = await shared(t);
  const agentId = await create(f, { ...base, reviewTier: 'gold', execution: { knowledge: { useMemory: true, maxChunks: 4 }, futureOption: 1 } });
  const got = dataOf(t, await f.call<{ agent: Record<string, unknown> }>('/v2/agents/get', { agentId }));
  t.equal(got.agent['reviewTier'], 'gold');
  t.same(got.agent['execution'], { knowledge: { useMemory: true, maxChunks: 4 }, futureOption: 1 });
});

t.test('response.responseAdapter must be a known adapter', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/create', { ...base, response: { responseAdapter: 'xml' } }), 'INVALID_ARGUMENT', /data\.response\.responseAdapter must be one of/);
});

t.test('input.userContextFields need an id and a title of at least 1 character and a known type', async (t) => {
  const f = await shared(t);
  const field = { id: 'brand', title: 'Brand', type: 'string' };
  expectError(t, await f.call('/v2/agents/create', { ...base, input: { userContextFields: [{ ...field, id: '' }] } }), 'INVALID_ARGUMENT', /userContextFields\[0\]\.id must not be empty/);
  expectError(t, await f.call('/v2/agents/create', { ...base, input: { userContextFields: [{ ...field, title: '' }] } }), 'INVALID_ARGUMENT', /userContextFields\[0\]\.title must not be empty/);
  expectError(t, await f.call('/v2/agents/create', { ...base, input: { userContextFields: [{ ...field, type: 'date' }] } }), 'INVALID_ARGUMENT', /userContextFields\[0\]\.type must be one of/);
});

t.test('web-page-text.deviceType is mobile or desktop', async (t) => {
  const f = await shared(t);
  const cg = (deviceType: string) => ({ strategies: ['web-page-text'], strategyOptions: { 'web-page-text': { deviceType } } });
  expectError(t, await f.call('/v2/agents/create', { ...base, contextGathering: cg('tablet') }), 'INVALID_ARGUMENT', /deviceType must be one of/);
  await create(f, { ...base, contextGathering: cg('mobile') });
});

t.test('an unwrapped body is refused', async (t) => {
  const f = await shared(t);
  const res = await f.api.send('/v2/agents/create', JSON.stringify(base), { 'x-svc-api-key': f.credentials.apiKey, 'x-svc-auth-token': f.credentials.authToken });
  expectError(t, res, 'INVALID_ARGUMENT', /data/);
});

// ---- Get Agent(s), spec 4.14 ----

t.test('get: agentId must not be empty; an unknown agent is NOT_FOUND', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/get', { agentId: '' }), 'INVALID_ARGUMENT', /data\.agentId must not be empty/);
  expectError(t, await f.call('/v2/agents/get', { agentId: 'nope' }), 'NOT_FOUND', /agent nope not found/);
});

t.test('get: an invalid filter is INVALID_ARGUMENT', async (t) => {
  const f = await shared(t);
  expectError(t, await f.call('/v2/agents/get', { filter: 'all' }), 'INVALID_ARGUMENT', /data\.filter must be one of/);
});

t.test('get: a built-in agent answers identity fields only', async (t) => {
  const f = await shared(t);
  const { agent } = dataOf(t, await f.call<{ agent: Record<string, unknown> }>('/v2/agents/get', { agentId: 'broken-links' }));
  t.same(Object.keys(agent).sort(), ['description', 'enabled', 'id', 'managedBy', 'name', 'system']);
  t.equal(agent['system'], true);
});

t.test('get: list rows are identity only with executionCount and lastExecutedAt; filter picks built-in or custom', async (t) => {
  const f = await shared(t);
  const agentId = await create(f);
  const all = dataOf(t, await f.call<{ agents: Array<Record<string, unknown>> }>('/v2/agents/get', {})).agents;
  const row = all.find((a) => a['id'] === agentId);
  t.match(row, { executionCount: 0, lastExecutedAt: null, managedBy: 'customer', version: 1 });
  t.notOk(row !== undefined && 'instructions' in row, 'no behavioural fields in a list row');
  const builtIns = dataOf(t, await f.call<{ agents: Array<{ system: boolean }> }>('/v2/agents/get', { filter: 'defaultOnly' })).agents;
  t.ok(builtIns.length >= 4 && builtIns.every((a) => a.system));
  const custom = dataOf(t, await f.call<{ agents: Array<{ system: boolean }> }>('/v2/agents/get', { filter: 'customOnly' })).agents;
  t.ok(custom.length >= 1 && custom.every((a) => !a.system));
});

t.test('get: agentId wins over filter', async (t) => {
  const f = await shared(t);
  const { agent } = dataOf(t, await f.call<{ agent: { id: string } }>('/v2/agents/get', { agentId: 'readability', filter: 'customOnly' }));
  t.equal(agent.id, 'readability');
});

t.test('get: groupId lists members in the group order, combinable with filter; an unknown group is NOT_FOUND', async (t) => {
  const f = await shared(t);
  const a = await create(f);
  const b = await create(f);
  const group = dataOf(t, await f.call<{ groupId: string }>('/v2/agents/groups/create', { name: 'g', agentIds: [b, 'readability', a] }));
  const ids = async (data: object) => dataOf(t, await f.call<{ agents: Array<{ id: string }> }>('/v2/agents/get', data)).agents.map((x) => x.id);
  t.same(await ids({ groupId: group.groupId }), [b, 'readability', a]);
  t.same(await ids({ groupId: group.groupId, filter: 'customOnly' }), [b, a]);
  t.same(await ids({ groupId: group.groupId, filter: 'defaultOnly' }), ['readability']);
  expectError(t, await f.call('/v2/agents/get', { groupId: 'missing' }), 'NOT_FOUND', /agent group missing not found/);
  expectError(t, await f.call('/v2/agents/get', { groupId: '' }), 'INVALID_ARGUMENT', /data\.groupId must not be empty/);
});

// ---- update, versions, delete ----

t.test('update changes identity only and writes no version', async (t) => {
  const f = await shared(t);
  const agentId = await create(f);
  const { agent } = dataOf(t, await f.call<{ agent: Record<string, unknown> }>('/v2/agents/update', { agentId, name: 'Renamed', enabled: false }));
  t.match(agent, { name: 'Renamed', enabled: false, version: 1 });
  expectError(t, await f.call('/v2/agents/update', { agentId }), 'INVALID_ARGUMENT', /at least one of name, description, enabled/);
  expectError(t, await f.call('/v2/agents/update', { agentId, instructions: 'x' }), 'INVALID_ARGUMENT', /data\.instructions is not an accepted field/);
  expectError(t, await f.call('/v2/agents/update', { agentId: 'broken-links', name: 'x' }), 'INVALID_ARGUMENT', /built in/);
});

t.test('version update writes N+1 checked as a whole; restore rolls back as a new version', async (t) => {
  const f = await shared(t);
  const agentId = await create(f);
  t.match(dataOf(t, await f.call('/v2/agents/version/update', { agentId, instructions: 'Be stricter.' })), { agentId, version: 2 });
  expectError(t, await f.call('/v2/agents/version/update', { agentId, execution: { executionStrategy: 'service' } }), 'INVALID_ARGUMENT', /serviceId is required/);
  expectError(t, await f.call('/v2/agents/version/update', { agentId }), 'INVALID_ARGUMENT', /at least one behavioural field/);
  const got = dataOf(t, await f.call<{ agent: Record<string, unknown> }>('/v2/agents/get', { agentId })).agent;
  t.match(got, { version: 2, instructions: 'Be stricter.', contextGathering: base.contextGathering });
  const versions = dataOf(t, await f.call<{ versions: Array<{ version: number; current: boolean }> }>('/v2/agents/versions/list', { agentId })).versions;
  t.same(versions.map((v) => [v.version, v.current]), [[2, true], [1, false]]);
  t.match(dataOf(t, await f.call('/v2/agents/versions/restore', { agentId })), { version: 3, restoredFrom: 1 });
  t.match(dataOf(t, await f.call<{ agent: Record<string, unknown> }>('/v2/agents/get', { agentId })).agent, { version: 3, instructions: base.instructions });
  expectError(t, await f.call('/v2/agents/versions/restore', { agentId, version: 9 }), 'NOT_FOUND', /version 9/);
});

t.test('delete removes the agent, its versions and its group memberships', async (t) => {
  const f = await shared(t);
  const agentId = await create(f);
  const { groupId } = dataOf(t, await f.call<{ groupId: string }>('/v2/agents/groups/create', { name: 'g', agentIds: [agentId] }));
  t.same(dataOf(t, await f.call('/v2/agents/delete', { agentId })), { agentId });
  expectError(t, await f.call('/v2/agents/get', { agentId }), 'NOT_FOUND', /not found/);
  expectError(t, await f.call('/v2/agents/versions/list', { agentId }), 'NOT_FOUND', /not found/);
  t.same(dataOf(t, await f.call<{ group: { agentIds: string[] } }>('/v2/agents/groups/get', { groupId })).group.agentIds, []);
  expectError(t, await f.call('/v2/agents/delete', { agentId }), 'NOT_FOUND', /not found/);
});

t.test('agent groups: create, list, update, add and remove agents, delete', async (t) => {
  const f = await shared(t);
  const a = await create(f);
  expectError(t, await f.call('/v2/agents/groups/create', { name: 'g', agentIds: ['ghost'] }), 'NOT_FOUND', /ghost/);
  const { groupId } = dataOf(t, await f.call<{ groupId: string }>('/v2/agents/groups/create', { name: 'Launch', agentIds: ['broken-links'] }));
  t.match(dataOf(t, await f.call('/v2/agents/groups/add-agents', { groupId, agentIds: [a, 'broken-links'] })), { group: { agentIds: ['broken-links', a] } });
  t.match(dataOf(t, await f.call('/v2/agents/groups/remove-agents', { groupId, agentIds: ['broken-links'] })), { group: { agentIds: [a] } });
  t.match(dataOf(t, await f.call('/v2/agents/groups/update', { groupId, name: 'Renamed' })), { group: { name: 'Renamed', agentIds: [a] } });
  expectError(t, await f.call('/v2/agents/groups/update', { groupId }), 'INVALID_ARGUMENT', /at least one of/);
  const list = dataOf(t, await f.call<{ groups: Array<{ groupId: string }> }>('/v2/agents/groups/list', {})).groups;
  t.ok(list.some((g) => g.groupId === groupId));
  t.same(dataOf(t, await f.call('/v2/agents/groups/delete', { groupId })), { groupId });
  expectError(t, await f.call('/v2/agents/groups/get', { groupId }), 'NOT_FOUND', /not found/);
});

// ---- secrets ----

t.test('secrets are sealed at rest, answered as __redacted__, and kept when sent back redacted', async (t) => {
  const f = await shared(t);
  const body = {
    ...base,
    contextGathering: {
      strategies: ['rest-api'],
      strategyOptions: { 'rest-api': { url: 'http://127.0.0.1:9/api', headers: { authorization: 'Bearer rest-secret-1' }, auth: { type: 'bearer', token: 'rest-secret-2' } } },
    },
    execution: { executionStrategy: 'mcp-tools', mcpServers: [{ url: 'http://127.0.0.1:9/mcp', auth: { type: 'bearer', token: 'mcp-secret-3' } }] },
  };
  const agentId = await create(f, body);
  const raw = JSON.stringify((await f.call('/v2/agents/get', { agentId })).body);
  for (const secret of ['rest-secret-1', 'rest-secret-2', 'mcp-secret-3']) t.notOk(raw.includes(secret), `${secret} is not answered`);
  const { agent } = dataOf(t, await f.call<{ agent: typeof body }>('/v2/agents/get', { agentId }));
  t.same(agent.contextGathering.strategyOptions['rest-api'].headers, { authorization: '__redacted__' });
  t.same(agent.execution.mcpServers[0]?.auth, { type: 'bearer', token: '__redacted__' });
  const versionsRaw = JSON.stringify((await f.call('/v2/agents/versions/list', { agentId })).body);
  t.notOk(versionsRaw.includes('secret-'), 'versions list is redacted too');

  // Sending the redacted agent back keeps every stored secret.
  await f.call('/v2/agents/version/update', { agentId, contextGathering: agent.contextGathering, execution: agent.execution });
  const runnable = f.server.services.agents.definitions.runnable(f.credentials.apiKey, agentId);
  t.same(runnable.behaviour.contextGathering.strategyOptions?.['rest-api']?.headers, { authorization: 'Bearer rest-secret-1' });
  t.same(runnable.behaviour.execution.mcpServers?.[0]?.auth, { type: 'bearer', token: 'mcp-secret-3' });

  // On disk: nothing in plaintext.
  const stored = JSON.stringify([...f.server.services.store.records('agent-versions').getRange({})]);
  t.notOk(stored.includes('secret-'), 'no plaintext secret in LMDB');

  // __redacted__ where nothing is stored is refused.
  expectError(t, await f.call('/v2/agents/create', { ...base, execution: { executionStrategy: 'mcp-tools', mcpServers: [{ url: 'http://127.0.0.1:9/x', auth: { token: '__redacted__' } }] } }), 'INVALID_ARGUMENT', /mcpServers\[0\]\.auth\.token is "__redacted__" but no secret is stored/);
});
