// No coordinated omission: behind a delaying proxy the same scenario shows higher latency and sends exactly as much.
import t from 'tap';
import { runLoad, type RunResult } from '../../src/load/run.js';
import { resolveScenario } from '../../src/load/scenario.js';
import { delayProxy } from '../helpers/delay-proxy.js';
import { startTestServer } from '../helpers/server.js';

const DELAY_MS = 100;

t.test('a slowed server shows higher latency, not a lower send rate', async (t) => {
  const { url, api, server } = await startTestServer(t);
  const credentials = await api.createWorkspace();
  const proxyPort = await delayProxy(t, server.port, DELAY_MS);
  const scenario = resolveScenario(['editing', 'readers', 'rest'], [
    {
      documents: 2,
      rampUpSeconds: 1,
      steadySeconds: 3,
      editing: { editorsPerDocument: 2, editsPerSecond: 5 },
      readers: { perDocument: 1, lateJoinersPerDocument: 0 },
      // one request takes at least 2 × DELAY_MS behind the proxy: a closed-loop client could not keep this rate
      rest: { requestsPerSecond: 30, mix: { 'presence.get': 1, 'comments.get': 1 } },
    },
  ]);
  const run = (target: string, keep = false): Promise<RunResult> =>
    runLoad({ url: target, kind: 'plait', scenario, apiKey: credentials.apiKey, authToken: credentials.authToken, workers: 1, seed: 42, keep, log: () => {} });
  const direct = await run(url, true);
  const slowed = await run(`http://127.0.0.1:${proxyPort}`);

  // --keep: the run's organization stays, with the users it created through the REST API
  const kept = await api.call<Array<{ userId: string }>>(credentials, '/v2/users/get', { organizationId: direct.report.machines[0]?.runId ?? '' });
  t.equal(kept.body.result?.data.length, direct.clients.length, 'the kept organization lists one user per sync client');

  const sent = (r: RunResult, name: string): number => r.report.phases.all.counters[name] ?? 0;
  const restSent = (r: RunResult): number => sent(r, 'rest.presence.get.sent') + sent(r, 'rest.comments.get.sent');
  t.ok(sent(direct, 'edits.sent') > 0, `edits sent directly: ${sent(direct, 'edits.sent')}`);
  t.equal(sent(slowed, 'edits.sent'), sent(direct, 'edits.sent'), 'the same edits are sent through the slow path (same seed, same schedule)');
  t.ok(restSent(direct) > 0, `REST requests sent directly: ${restSent(direct)}`);
  t.equal(restSent(slowed), restSent(direct), 'the same REST requests are sent through the slow path');
  t.equal(slowed.report.delivery.complete, slowed.report.delivery.clients, 'every reader still holds every edit');

  // Every edit crosses the proxy twice (sender to server, server to receiver) and every REST call once each way,
  // so each latency of the slowed run is bounded below by the delay (less a millisecond of timer rounding): a bound
  // the proxy guarantees, whatever else the machine is doing. Comparing with the direct run's figures would be
  // timing (on a loaded machine the direct run can be slower still), so those are only printed.
  const floor = 2 * DELAY_MS - 2;
  const e2e = (r: RunResult): { min: number; p50: number; count: number } => r.report.phases.all.histograms['sync.e2e'] ?? { min: 0, p50: 0, count: 0 };
  t.ok(e2e(slowed).count > 0 && e2e(direct).count > 0, 'both runs measured edits end to end');
  t.ok(e2e(slowed).min >= floor, `every edit behind the proxy took at least ${floor} ms (fastest ${e2e(slowed).min} ms, p50 ${e2e(slowed).p50} ms)`);
  const rest = (r: RunResult): { min: number; p50: number; count: number } => r.report.phases.all.histograms['rest.presence.get'] ?? { min: 0, p50: 0, count: 0 };
  t.ok(rest(slowed).count > 0, 'REST latency measured behind the proxy');
  t.ok(rest(slowed).min >= floor, `every REST call behind the proxy took at least ${floor} ms (fastest ${rest(slowed).min} ms, p50 ${rest(slowed).p50} ms)`);
  t.comment(`direct: edit p50 ${e2e(direct).p50} ms, REST p50 ${rest(direct).p50} ms; behind the proxy: ${e2e(slowed).p50} ms, ${rest(slowed).p50} ms`);
});
