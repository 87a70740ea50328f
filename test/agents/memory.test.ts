// Tests Memory alerts: decisions on an agent's suggestions, one alert per approval drift, list/dismiss/action, config.
import t from 'tap';
import { assess, DEFAULT_ALERT_CONFIG } from '../../src/agents/memory/drift.js';
import { dataOf, directoryFixture, expectError } from '../helpers/directory.js';

const scope = { organizationId: 'org-mem', documentId: 'doc-mem' };

t.test('the drift statistic: a drop past the thresholds with a significant z is a drift; noise is not', async (t) => {
  const config = { ...DEFAULT_ALERT_CONFIG, recentWindow: 5, minBaselineDecisions: 8 };
  t.equal(assess(Array(12).fill(true), config), undefined, 'too few decisions: no verdict');
  t.match(assess([...Array(8).fill(true), ...Array(5).fill(false)], config), { drift: true, baseline: 1, current: 0, severity: 'high' });
  t.match(assess([...Array(8).fill(true), true, true, true, true, false], config), { drift: false });
  t.match(assess([true, false, true, false, true, false, true, false, true, false, true, false, true], config), { drift: false }, 'a steady rate is no drift');
});

interface Alert {
  id: string;
  severity: string;
  status: string;
  dedupKey: string;
  alertType: string;
  evidence: { metric: string; baseline: number; current: number; window: unknown };
}

t.test('rejecting most suggestions after a baseline of approvals raises exactly one alert; dismissing removes it', async (t) => {
  const f = await directoryFixture(t);
  const list = async (): Promise<Alert[]> => {
    const res = await f.call<never>('/v2/memory/alerts/list', {});
    t.equal(res.status, 200);
    return (res.body as unknown as { result: Alert[] }).result;
  };
  const config = (await f.call('/v2/memory/alerts/config/update', { recentWindow: 5, minBaselineDecisions: 8 })).body as unknown as { result: { recentWindow: number } };
  t.equal(config.result.recentWindow, 5, 'config update answers the whole config');
  expectError(t, await f.call('/v2/memory/alerts/config/update', { minDrop: 2 }), 'INVALID_ARGUMENT', /data\.minDrop/);

  const ids = Array.from({ length: 16 }, (_, i) => `s${i}`);
  await f.call('/v2/commentannotations/add', {
    ...scope,
    commentAnnotations: ids.map((annotationId) => ({ annotationId, type: 'suggestion', context: { agentId: 'tone-agent' }, suggestion: { status: 'pending' }, commentData: [{ commentText: 'fix', from: { userId: 'agent:tone-agent' } }] })),
  });
  const decide = async (annotationId: string, status: 'accepted' | 'rejected'): Promise<void> => {
    dataOf(t, await f.call('/v2/commentannotations/update', { ...scope, annotationIds: [annotationId], updatedData: { suggestion: { status } } }));
    await f.server.services.agents.memory.settled();
  };
  for (const id of ids.slice(0, 8)) await decide(id, 'accepted');
  t.same(await list(), [], 'approvals raise nothing');
  for (const id of ids.slice(8, 12)) await decide(id, 'rejected');
  t.same(await list(), [], 'not yet a full recent window');
  for (const id of ids.slice(12)) await decide(id, 'rejected');
  await decide('s0', 'accepted');
  const alerts = await list();
  t.equal(alerts.length, 1, 'one drift, one alert');
  t.match(alerts[0], { alertType: 'approval_rate_drift', severity: 'high', status: 'active', dedupKey: /tone-agent/, evidence: { metric: 'approval_rate', baseline: 1, current: 0 } });

  const dismissed = await f.call('/v2/memory/alerts/dismiss', { alertId: alerts[0]?.id, user: 'lead' });
  t.same(dismissed.body, { result: { success: true } });
  t.same(await list(), [], 'a dismissed alert leaves the list');
  const again = await f.call('/v2/memory/alerts/dismiss', { alertId: 'nope' });
  expectError(t, again, 'INTERNAL', /alert nope not found/);
  expectError(t, await f.call('/v2/memory/alerts/action', { alertId: 'nope' }), 'INTERNAL', /not found/);
  const cfg = (await f.call('/v2/memory/alerts/config/get', {})).body as unknown as { result: { minBaselineDecisions: number } };
  t.equal(cfg.result.minBaselineDecisions, 8);
});
