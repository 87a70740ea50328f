// plait-load's pure parts: scenarios (presets, combining, validation, flags), arrival schedules, the client plan, Prometheus parsing, histogram merging.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { decode, mergeEncoded, newHistogram, recordMs, toEncoded } from '../../src/load/histograms.js';
import { FLAGS, USAGE, flagPatch } from '../../src/load/main.js';
import { Arrivals, planClients, rng } from '../../src/load/plan.js';
import { parsePrometheus, serverMetrics } from '../../src/load/prometheus.js';
import { PRESETS, resolveScenario } from '../../src/load/scenario.js';

t.test('scenarios combine presets, files and flags; errors name the field', async (t) => {
  const s = resolveScenario(['editing', 'readers'], [{ documents: 3 }, flagPatch({ 'edit-rate': '4', 'text-size': '5-9', readers: '7' })]);
  t.equal(s.name, 'editing+readers');
  t.equal(s.documents, 3);
  t.same(s.editing, { editorsPerDocument: 3, editsPerSecond: 4, textSize: { min: 5, max: 9 }, maxDocumentChars: 20_000 }, 'a flag overrides one field, the preset keeps the rest');
  t.equal(s.readers?.perDocument, 7);
  t.equal(s.presence, undefined, 'blocks not asked for are absent');
  t.ok(resolveScenario(['collaboration']).rest !== undefined, 'collaboration holds every block');
  t.equal(resolveScenario(['smoke']).documents, 2);
  const onlyFlags = resolveScenario([], [flagPatch({ 'rest-rate': '5' })]);
  t.same(onlyFlags.rest?.mix, PRESETS['rest']?.rest?.mix, 'a block named only by a flag takes its preset defaults');
  t.throws(() => resolveScenario(['nope']), /unknown scenario "nope"/);
  t.throws(() => resolveScenario(['editing'], [{ documents: 0 }]), /scenario.documents must be an integer from 1/);
  t.throws(() => resolveScenario(['editing'], [{ editing: { textSize: { min: 5, max: 2 } } }]), /scenario.editing.textSize.max/);
  t.throws(() => resolveScenario(['rest'], [{ rest: { mix: { 'bogus.op': 1 } as never } }]), /scenario.rest.mix.bogus.op is not an operation/);
  t.throws(() => resolveScenario([], []), /has no workload/);
  t.throws(() => flagPatch({ docs: 'ten' }), /--docs must be a number/);
});

t.test('open-model arrivals: the expected count, ramped, and the same for one seed', async (t) => {
  const times = (kind: 'uniform' | 'poisson', seed: number): number[] => {
    const a = new Arrivals(10, 2, kind, rng(seed));
    const out: number[] = [];
    for (let x = a.next(); x < 12; x = a.next()) out.push(x);
    return out;
  };
  const uniform = times('uniform', 1);
  // 10/s ramped over 2 s (10 expected) then 10 s at full rate (100)
  t.ok(Math.abs(uniform.length - 110) <= 1, `uniform: ${uniform.length} arrivals`);
  t.ok(uniform.filter((x) => x < 1).length < uniform.filter((x) => x >= 1 && x < 2).length, 'fewer arrivals early in the ramp');
  t.ok(uniform.every((x, i) => i === 0 || x > (uniform[i - 1] ?? 0)), 'increasing');
  const poisson = times('poisson', 5);
  t.ok(poisson.length > 70 && poisson.length < 150, `poisson: ${poisson.length} arrivals`);
  t.same(times('poisson', 5), poisson, 'one seed, one schedule');
  t.equal(new Arrivals(0, 0, 'uniform', rng(1)).next(), Infinity, 'a zero rate never arrives');
});

t.test('the client plan', async (t) => {
  const scenario = resolveScenario(['editing', 'readers', 'presence'], [
    { documents: 2, rampUpSeconds: 4, steadySeconds: 6, readers: { perDocument: 3, lateJoinersPerDocument: 1 }, presence: { churnPerSecond: 2, churnHoldSeconds: 1 } },
  ]);
  const clients = planClients(scenario, 'run', 1);
  const count = (role: string): number => clients.filter((c) => c.role === role).length;
  t.equal(count('editor'), 6);
  t.equal(count('reader'), 6);
  t.equal(count('late'), 2);
  t.ok(Math.abs(count('churn') - 16) <= 1, `churn: ${count('churn')} (2/s, ramped over 4 s, for 10 s)`);
  t.ok(clients.filter((c) => c.role === 'editor' || c.role === 'reader').every((c) => c.joinAt < 4), 'early clients join during the ramp-up');
  t.ok(clients.filter((c) => c.role === 'late').every((c) => c.joinAt === 7), 'late joiners at half the steady phase');
  t.ok(clients.filter((c) => c.role === 'churn').every((c) => (c.leaveAt ?? 0) <= 10 && (c.leaveAt ?? 0) > c.joinAt), 'churning clients leave');
  t.equal(new Set(clients.map((c) => c.userId)).size, clients.length, 'one user per client');
});

t.test('Prometheus text: samples, counters changed by the run, and a missing endpoint', async (t) => {
  const before = parsePrometheus('# HELP x\n# TYPE x counter\nplait_requests_total{op="a b"} 5\nplait_open 3\n');
  const after = parsePrometheus('plait_requests_total{op="a b"} 12 1700000000\nplait_open 4\nbroken line\nplait_lat_seconds_sum 1.5\n');
  t.same(after, { 'plait_requests_total{op="a b"}': 12, plait_open: 4, plait_lat_seconds_sum: 1.5 });
  const metrics = serverMetrics('http://x/metrics', before, { samples: after });
  t.same(metrics.delta, { 'plait_requests_total{op="a b"}': 7, plait_lat_seconds_sum: 1.5 }, 'gauges are not differenced');
  t.same(serverMetrics('http://x/metrics', undefined, { note: 'HTTP 404' }), { available: false, url: 'http://x/metrics', note: 'HTTP 404' });
});

t.test('histograms merge exactly', async (t) => {
  const a = newHistogram();
  const b = newHistogram();
  for (let i = 1; i <= 1000; i++) recordMs(i % 2 === 0 ? a : b, i);
  const merged = mergeEncoded([toEncoded(a), toEncoded(b).encoded, undefined]);
  t.equal(merged.count, 1000);
  t.ok(Math.abs(merged.p50 - 500) <= 1, `p50 ${merged.p50}`);
  t.ok(Math.abs(merged.p999 - 999) <= 1, `p99.9 ${merged.p999}`);
  t.equal(decode(merged.encoded).totalCount, 1000);
  recordMs(a, 0);
  t.equal(a.minNonZeroValue, 1, 'values below a microsecond count as one');
});

t.test('the README and --help list every flag; the README shows the committed example report', async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const flag of Object.keys(FLAGS)) {
    if (flag === 'help') continue;
    t.ok(readme.includes(`\`--${flag}\``), `README names --${flag}`);
    t.ok(USAGE.includes(`--${flag}`), `--help names --${flag}`);
  }
  const summary = readFileSync(new URL('../../docs/load-example/summary.txt', import.meta.url), 'utf8').trim();
  t.ok(readme.includes(summary), 'the README quotes docs/load-example/summary.txt');
  const example = JSON.parse(readFileSync(new URL('../../docs/load-example/report.json', import.meta.url), 'utf8')) as { format: string; delivery: { complete: number; clients: number } };
  t.equal(example.format, 'plait-load/1');
  t.ok(example.delivery.clients > 0 && example.delivery.complete === example.delivery.clients, 'the example run delivered every edit');
});
