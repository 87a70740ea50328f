// Tests the event-loop delay figures: the timer's interval is taken off (prom-client's read ~1 s on an idle server), a stall shows, windows reset.
import t from 'tap';
import { EventLoopDelay } from '../../src/metrics/event-loop.js';
import { createMetricsRegistry, registerEventLoopDelay } from '../../src/metrics/registry.js';
import { metricsScrape } from '../../src/metrics/scrape.js';

const INTERVAL_MS = 20;

/** Yields to the event loop until the sampler's timer has run `n` times (no fixed wait). */
async function samplesOf(delay: EventLoopDelay, n: number): Promise<void> {
  while (delay.samples < n) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Holds the event loop for `ms`, as a long synchronous task does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: the point is that no timer can run
  }
}

t.test('an idle loop reads the lateness alone, not the sampling interval', async (t) => {
  const delay = new EventLoopDelay(INTERVAL_MS);
  t.teardown(() => delay.stop());
  await samplesOf(delay, 6);
  const figures = delay.take();
  // Node's samples are interval + lateness, each ≥ INTERVAL_MS; with the interval kept every figure would be too.
  t.ok(figures.min < INTERVAL_MS / 1000, `min ${figures.min} s is below the ${INTERVAL_MS} ms interval`);
  t.ok(figures.min <= figures.p50 && figures.p50 <= figures.p99 && figures.p99 <= figures.max, 'figures in order');
  t.equal(delay.samples, 0, 'taking the figures starts a new window');
  t.same(delay.take(), { min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 }, 'an empty window reads 0');
});

t.test('a stall shows as the time the timer was late', async (t) => {
  const delay = new EventLoopDelay(INTERVAL_MS);
  t.teardown(() => delay.stop());
  await samplesOf(delay, 1);
  delay.take();
  stall(150);
  await samplesOf(delay, 1);
  const figures = delay.take();
  // The timer fell due at most INTERVAL_MS into the stall, so it ran at least 150 − 20 ms late.
  t.ok(figures.max >= 0.13, `max ${figures.max} s`);
  t.ok(figures.max < 1, 'and not more than the stall and the machine add');
});

const NO_DOCUMENTS = { documents: () => ({ loaded: 0, connections: 0, mailboxDepth: 0, mailboxMax: 0 }) };

t.test('the registry exports the seven figures under prom-client\'s names, one window per scrape', async (t) => {
  const delay = new EventLoopDelay(INTERVAL_MS);
  t.teardown(() => delay.stop());
  const registry = createMetricsRegistry(NO_DOCUMENTS, delay);
  const names = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map((figure) => `nodejs_eventloop_lag_${figure}_seconds`);
  for (const name of names) t.ok(registry.getSingleMetric(name), `${name} is registered`);
  t.ok(registry.getSingleMetric('nodejs_eventloop_lag_seconds'), 'prom-client\'s scrape-time lag stays');
  stall(100);
  // The sampler's timer fell due during the stall: it runs in the next timers phase, before this 0 ms one.
  await new Promise<void>((resolve) => setTimeout(resolve, 0));
  const text = await registry.metrics();
  const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  t.ok(read('nodejs_eventloop_lag_max_seconds') >= 0.08, `the stall is in max (${read('nodejs_eventloop_lag_max_seconds')})`);
  t.ok(read('nodejs_eventloop_lag_min_seconds') <= read('nodejs_eventloop_lag_p99_seconds'), 'one window for all seven');
  t.equal(text.match(/^nodejs_eventloop_lag_max_seconds /gm)?.length, 1, 'each name once');
  t.equal(delay.samples, 0, 'the scrape took the window');

  const bare = createMetricsRegistry(NO_DOCUMENTS, undefined);
  t.notOk(bare.getSingleMetric('nodejs_eventloop_lag_max_seconds'), 'without default metrics, no delay gauges');
  registerEventLoopDelay(bare, delay);
  t.ok(bare.getSingleMetric('nodejs_eventloop_lag_max_seconds'), 'registered on their own');
});

t.test('the scrape makes the registry once, at the first call', async (t) => {
  const scrape = metricsScrape(NO_DOCUMENTS);
  t.teardown(() => scrape.stop());
  const first = await scrape.scrape();
  t.match(first.contentType, /^text\/plain; version=0\.0\.4/);
  t.match(first.text, /^nodejs_eventloop_lag_max_seconds /m);
  t.match(first.text, /^plait_documents_loaded 0$/m);
  const second = await scrape.scrape();
  t.equal(second.text.match(/^# TYPE plait_documents_loaded /gm)?.length, 1, 'the same registry: each family once');
});
