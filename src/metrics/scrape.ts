// Owns the /metrics scrape: the Prometheus registry is made at the first scrape, so a server nobody scrapes never loads prom-client.
import type { Registry } from 'prom-client';
import { EVENT_LOOP_SAMPLE_MS, EventLoopDelay } from './event-loop.js';
import type { MetricSources } from './registry.js';

export interface MetricsScrape {
  /** The exposition text and its content type, as of now. */
  scrape(): Promise<{ readonly contentType: string; readonly text: string }>;
  /** Stops the event-loop sampler (the server's stop; several servers may share a process, as in tests). */
  stop(): void;
}

/**
 * prom-client and its default metrics are ~0.5 MB of heap and code at start (bench/README.md, "Twelfth session"),
 * for a server that may never be scraped. Plait's own counters and histograms (src/metrics/instruments.ts) count from
 * the start whatever happens; the event-loop sampler starts now too, so the first scrape has its samples. What counts
 * only from the first scrape: prom-client's GC durations (`nodejs_gc_duration_seconds`), a counter Prometheus reads
 * as a rate anyway.
 */
export function metricsScrape(sources: MetricSources): MetricsScrape {
  const eventLoop = new EventLoopDelay(EVENT_LOOP_SAMPLE_MS);
  let registry: Promise<Registry> | undefined;
  return {
    async scrape() {
      registry ??= import('./registry.js')
        .then((module) => module.createMetricsRegistry(sources, eventLoop))
        .catch((error: unknown) => {
          // This scrape fails (logged by the route); the next one tries again.
          registry = undefined;
          throw error;
        });
      const made = await registry;
      return { contentType: made.contentType, text: await made.metrics() };
    },
    stop: () => eventLoop.stop(),
  };
}
