// Owns one server's Prometheus registry: the process-wide instruments plus gauges read from its services at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { FIGURES, type EventLoopDelay, type Figure } from './event-loop.js';
import { groupCommitSeconds, groupCommitSize, limitRefusals, mailboxCounts, restRequests, restSeconds, syncCounts } from './instruments.js';

/** What the scrape reads from the server (src/doc/registry.ts `stats()`). */
export interface MetricSources {
  documents(): { loaded: number; connections: number; mailboxDepth: number; mailboxMax: number; joinStateBytes?: number };
  /** Cluster mode only: the state log (src/cluster/state.ts). */
  state?(): {
    applied: number;
    unacknowledged: number;
    refusing: boolean;
    /** The stream's last sequence as last seen minus the applied one, and documents fenced off here (fencing). */
    lag: number;
    diverged: number;
    /** The stream's first and last sequence, the state log's bytes, and the last checkpoint this node wrote (compaction). */
    first: number;
    last: number;
    logBytes: number;
    checkpointSeq: number;
    checkpointBytes: number;
    checkpointSeconds: number;
    /** What this node's sweeps removed from the object stores (cut-off uploads, blobs of purged messages left behind). */
    sweptObjects: number;
    sweptBytes: number;
  };
}

/** A counter whose value is a plain number kept by the hot path, brought up to date when scraped. */
function mirroredCounter(registry: Registry, name: string, help: string, read: () => number): void {
  let exported = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > exported) this.inc(now - exported);
      exported = now;
    },
  });
}

/**
 * prom-client's own delay histogram, replaced by src/metrics/event-loop.ts: sampled this rarely (~24 days) so its
 * timer costs no wake-ups.
 */
const PROM_CLIENT_SAMPLE_MS = 2_147_483_647;

/**
 * `eventLoop`: the delay sampler, started before the registry is made (src/metrics/scrape.ts makes the registry at the
 * first scrape), so the first scrape already has its samples; undefined: none of the process's default metrics.
 */
export function createMetricsRegistry(sources: MetricSources, eventLoop: EventLoopDelay | undefined): Registry {
  const registry = new Registry();
  if (eventLoop !== undefined) {
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: PROM_CLIENT_SAMPLE_MS });
    // prom-client samples event-loop delay with a 10 ms timer by default: 100 wake-ups a second that cost an idle
    // server ~1% of a core (issue 18, bench/README.md), and exports each sample with the timer's interval in it. Plait
    // samples every second and exports the lateness alone: every stall of 1 s or more shows, a 100 ms one one time in
    // ten, with its length as it was left when the timer fell due. A server stalling often still shows it within a
    // scrape or two; one stall shorter than a second may not. `nodejs_eventloop_lag_seconds` (prom-client's) is
    // measured at each scrape and needs no timer.
    registerEventLoopDelay(registry, eventLoop);
  }
  // Families of src/metrics/instruments.ts give the registry what a prom-client metric's get() gives.
  for (const family of [restRequests, restSeconds, groupCommitSize, groupCommitSeconds]) registry.registerMetric(family as unknown as Metric);

  const gauge = (name: string, help: string, read: () => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  };
  // Each gauge walks the loaded documents once per scrape (a few thousand entries at most: cheap, and never on a hot path).
  gauge('plait_sync_connections', 'Open sync (WebSocket) connections', () => sources.documents().connections);
  gauge('plait_documents_loaded', 'Documents loaded in memory (actors)', () => sources.documents().loaded);
  gauge('plait_mailbox_depth', 'Tasks queued in all document mailboxes', () => sources.documents().mailboxDepth);
  gauge('plait_mailbox_depth_max', 'Tasks queued in the fullest document mailbox', () => sources.documents().mailboxMax);
  gauge('plait_join_state_bytes', 'Bytes of kept late-join answers over all documents (at most JOIN_STATE_CACHE_BYTES)', () => sources.documents().joinStateBytes ?? 0);

  const state = sources.state;
  if (state !== undefined) {
    gauge('plait_cluster_state_applied_seq', 'Cluster mode: the state stream sequence this node has applied to its cache', () => state().applied);
    gauge('plait_cluster_state_unacknowledged', 'Cluster mode: committed writes waiting for the state stream to acknowledge them', () => state().unacknowledged);
    gauge('plait_cluster_state_first_seq', 'Cluster mode: the state stream\'s first sequence (messages before it were compacted into a checkpoint)', () => state().first);
    gauge('plait_cluster_state_last_seq', 'Cluster mode: the state stream\'s last sequence as last read (every 5 s)', () => state().last);
    gauge('plait_cluster_state_log_bytes', 'Cluster mode: bytes of the state log (the stream and its blobs) as last read', () => state().logBytes);
    gauge('plait_cluster_checkpoint_seq', 'Cluster mode: stream sequence of the last checkpoint this node wrote (0: none)', () => state().checkpointSeq);
    gauge('plait_cluster_checkpoint_bytes', 'Cluster mode: size of the last checkpoint this node wrote', () => state().checkpointBytes);
    gauge('plait_cluster_checkpoint_duration_seconds', 'Cluster mode: how long the last checkpoint this node wrote took (build, upload, purge)', () => state().checkpointSeconds);
    mirroredCounter(registry, 'plait_cluster_swept_objects_total', 'Cluster mode: uploads cut off half-way and blobs of purged messages left behind that this node swept from the object stores', () => state().sweptObjects);
    mirroredCounter(registry, 'plait_cluster_swept_bytes_total', 'Cluster mode: bytes this node swept from the object stores (cut-off uploads, blobs left behind)', () => state().sweptBytes);
    gauge('plait_cluster_state_lag', 'Cluster mode: state stream messages not yet applied here (the stream\'s last sequence as last seen minus the applied one)', () => state().lag);
    gauge('plait_cluster_state_diverged_documents', 'Cluster mode: documents whose writes here were fenced off by a newer owner (the cache is rebuilt at the next start)', () => state().diverged);
    gauge('plait_cluster_state_refusing', 'Cluster mode: 1 while writes are refused because earlier ones wait to be resent', () => (state().refusing ? 1 : 0));
  }

  mirroredCounter(registry, 'plait_sync_frames_in_total', 'Frames received on sync connections', () => syncCounts.framesIn);
  mirroredCounter(registry, 'plait_sync_frames_sent_total', 'Frames sent to one sync connection', () => syncCounts.framesSent);
  mirroredCounter(
    registry,
    'plait_sync_frames_published_total',
    'Frames published to a topic of a document (each reaches every other subscriber)',
    () => syncCounts.framesPublished,
  );
  mirroredCounter(registry, 'plait_sync_connections_opened_total', 'Sync connections opened', () => syncCounts.opened);
  mirroredCounter(registry, 'plait_sync_connections_closed_total', 'Sync connections closed', () => syncCounts.closed);
  mirroredCounter(registry, 'plait_mailbox_shed_total', 'Messages refused because a document mailbox was full', () => mailboxCounts.shed);
  const refusalsExported = new Map<string, number>();
  new Counter({
    name: 'plait_limit_refusals_total',
    help: 'Requests refused by a limit on what one workspace may take or on shared work (docs/limits.md)',
    labelNames: ['limit'],
    registers: [registry],
    collect() {
      // Every limit is exported, refused or not, so a dashboard sees the series from the first scrape.
      for (const [limit, now] of Object.entries(limitRefusals)) {
        this.inc({ limit }, now - (refusalsExported.get(limit) ?? 0));
        refusalsExported.set(limit, now);
      }
    },
  });
  return registry;
}

const HELP: Record<Figure, string> = {
  min: 'The minimum event loop delay since the last scrape (how late a timer fired).',
  max: 'The maximum event loop delay since the last scrape (how late a timer fired).',
  mean: 'The mean event loop delay since the last scrape (how late a timer fired).',
  stddev: 'The standard deviation of the event loop delay since the last scrape.',
  p50: 'The 50th percentile of the event loop delay since the last scrape (how late a timer fired).',
  p90: 'The 90th percentile of the event loop delay since the last scrape (how late a timer fired).',
  p99: 'The 99th percentile of the event loop delay since the last scrape (how late a timer fired).',
};

/**
 * Registers the seven gauges of `delay` in `registry` in place of prom-client's own of the same names (removed first).
 * The figures are taken once per scrape, when `min` is collected: a scrape collects the metrics in registration
 * order, so the other six then read the same window.
 */
export function registerEventLoopDelay(registry: Registry, delay: EventLoopDelay): void {
  let taken: Record<Figure, number> = { min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 };
  for (const figure of FIGURES) {
    const name = `nodejs_eventloop_lag_${figure}_seconds`;
    registry.removeSingleMetric(name);
    new Gauge({
      name,
      help: HELP[figure],
      registers: [registry],
      collect() {
        if (figure === 'min') taken = delay.take();
        this.set(taken[figure]);
      },
    });
  }
}
