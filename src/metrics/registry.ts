// Owns one server's Prometheus registry: the process-wide instruments plus gauges read from its services at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { FIGURES, type EventLoopDelay, type Figure } from './event-loop.js';
import { budgetCounts, clusterCounts, groupCommitSeconds, groupCommitSize, limitRefusals, mailboxCounts, restRequests, restSeconds, syncCounts } from './instruments.js';

/**
 * How full the shared queues are (docs/limits.md, "Shared work, per workspace"), read once per scrape: every figure
 * is kept by its queue or read from a row count, so a backlog costs the scrape nothing more. No figure is per API key.
 */
export interface QueueStats {
  /** src/delivery/service.ts `occupancy()`: the runner's figures (the worker-role holder) and the pending backlog. */
  readonly delivery: {
    readonly inFlight: number;
    readonly targetsFull: number;
    readonly keysFull: number;
    readonly targetsThrottled: number;
    readonly targetsFailing: number;
    readonly unprovenInFlight: number;
    readonly pending: number;
    readonly targetsPending: number;
    readonly overdueMs: number;
  };
  /** Events not yet planned by the dispatcher, in the outbox and parked in the API keys' lanes. */
  readonly outboxEvents: number;
  /** Of those, the events parked in lanes (src/events/outbox-lanes.ts). */
  readonly outboxParked: number;
  /** src/agents/fair-queue.ts `occupancy()`. */
  readonly agents: { readonly waiting: number; readonly running: number; readonly keysWaiting: number };
  /** src/tenant/jobs.ts `occupancy()`. */
  readonly jobs: { readonly running: number; readonly waiting: number };
}

/** What the scrape reads from the server (src/doc/registry.ts `stats()`). */
export interface MetricSources {
  documents(): { loaded: number; connections: number; mailboxDepth: number; mailboxMax: number; joinStateBytes?: number; loadedBytes?: number };
  /** The shared queues; absent in tests of the registry alone. */
  queues?(): QueueStats;
  /** The sync sockets' send side (src/ws/socket-topics.ts `stats()`); absent in tests of the registry alone. */
  sockets?(): { buffered: number; queued: number; queuedBytes: number };
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
  // The loaded documents are walked once per scrape, for all six gauges (the walk also re-reads each one's stored bytes).
  const docs = perScrape(sources.documents);
  gauge('plait_sync_connections', 'Open sync (WebSocket) connections', docs.first((d) => d.connections));
  gauge('plait_documents_loaded', 'Documents loaded in memory (actors)', docs.later((d) => d.loaded));
  gauge('plait_documents_loaded_bytes', 'Loaded documents\' bytes as stored, as the loaded-documents budget last estimated them (compare with MAX_LOADED_DOCUMENT_BYTES)', docs.later((d) => d.loadedBytes ?? 0));
  gauge('plait_mailbox_depth', 'Tasks queued in all document mailboxes', docs.later((d) => d.mailboxDepth));
  gauge('plait_mailbox_depth_max', 'Tasks queued in the fullest document mailbox', docs.later((d) => d.mailboxMax));
  gauge('plait_join_state_bytes', 'Bytes of kept late-join answers over all documents (at most JOIN_STATE_CACHE_BYTES)', docs.later((d) => d.joinStateBytes ?? 0));

  const queues = sources.queues;
  if (queues !== undefined) registerQueueGauges(queues, gauge);

  if (sources.sockets !== undefined) {
    // One walk of the sockets per scrape for the three (a native call per socket for its buffer).
    const sockets = perScrape(sources.sockets);
    gauge('plait_sync_buffered_bytes', 'Bytes uWS holds in sync connections\' send buffers, copies each (a slow reader holds at most ~1.3 MiB before frames queue for it shared)', sockets.first((s) => s.buffered));
    gauge('plait_sync_connections_queued', 'Sync connections with frames queued behind their buffer, off their topics until it drains', sockets.later((s) => s.queued));
    gauge('plait_sync_queued_bytes', 'Bytes of frames queued for sync connections and not yet written, each frame counted once per connection though held once', sockets.later((s) => s.queuedBytes));
  }

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
  mirroredCounter(registry, 'plait_sync_frames_queued_total', 'Frames held in a sync connection\'s own queue, shared, instead of copied into its buffer at once (large frames, slow readers)', () => syncCounts.framesQueued);
  mirroredCounter(registry, 'plait_sync_connections_opened_total', 'Sync connections opened', () => syncCounts.opened);
  mirroredCounter(registry, 'plait_sync_connections_closed_total', 'Sync connections closed', () => syncCounts.closed);
  mirroredCounter(registry, 'plait_cluster_usage_messages_total', 'Cluster mode: messages of other nodes\' per-key limit usage applied to this node\'s buckets', () => clusterCounts.usageReceived);
  mirroredCounter(registry, 'plait_documents_unloaded_early_total', 'Documents unloaded before DOC_IDLE_UNLOAD_MS to keep within the loaded-documents budget', () => budgetCounts.unloadedEarly);
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

/**
 * Reads `source` once per scrape: the gauge registered with `first` takes the figures when it is collected, and those
 * registered after it with `later` reuse them (a scrape collects the metrics in registration order, as
 * registerEventLoopDelay relies on too), so all of them read one moment.
 */
function perScrape<S>(source: () => S): { first: (read: (stats: S) => number) => () => number; later: (read: (stats: S) => number) => () => number } {
  let taken: S | undefined;
  return {
    first: (read) => () => read((taken = source())),
    later: (read) => () => read(taken ?? (taken = source())),
  };
}

/** The gauges of the shared queues, read once per scrape. */
function registerQueueGauges(queues: () => QueueStats, gauge: (name: string, help: string, read: () => number) => void): void {
  const { first, later } = perScrape(queues);
  gauge('plait_delivery_attempts_in_flight', 'Delivery attempts in flight (on the worker-role holder)', first((q) => q.delivery.inFlight));
  gauge('plait_delivery_targets_full', 'Delivery targets at their limit of attempts in flight; their other due jobs wait', later((q) => q.delivery.targetsFull));
  gauge('plait_delivery_keys_full', 'API keys at their limit of delivery attempts in flight over all their targets; their other due jobs wait', later((q) => q.delivery.keysFull));
  gauge('plait_delivery_targets_throttled', 'Delivery targets waiting out a rate limit (an advanced webhook endpoint\'s rateLimit)', later((q) => q.delivery.targetsThrottled));
  gauge('plait_delivery_targets_failing', 'Delivery targets whose last attempt failed: one attempt in flight each until one succeeds', later((q) => q.delivery.targetsFailing));
  gauge('plait_delivery_unproven_attempts_in_flight', 'Delivery attempts in flight to targets that never had a successful attempt (one each, in slots of their own)', later((q) => q.delivery.unprovenInFlight));
  gauge('plait_delivery_jobs_pending', 'Delivery jobs pending, due now or later (retries included)', later((q) => q.delivery.pending));
  gauge('plait_delivery_targets_pending', 'Delivery targets with a pending job', later((q) => q.delivery.targetsPending));
  gauge('plait_delivery_overdue_seconds', 'How long the earliest pending delivery job has been due (0 when none is)', later((q) => q.delivery.overdueMs / 1000));
  gauge('plait_outbox_events', 'Events the dispatcher has not planned yet, parked ones included', later((q) => q.outboxEvents));
  gauge('plait_outbox_events_parked', 'Of those, events parked in their API key\'s lane after it planned its share of a dispatcher round', later((q) => q.outboxParked));
  gauge('plait_agent_tasks_waiting', 'Agent tasks waiting for a pool thread (compare with AGENT_QUEUE_LIMIT)', later((q) => q.agents.waiting));
  gauge('plait_agent_tasks_running', 'Agent tasks running on a pool thread (at most AGENT_POOL_SIZE)', later((q) => q.agents.running));
  gauge('plait_agent_keys_waiting', 'API keys with an agent task waiting for a pool thread', later((q) => q.agents.keysWaiting));
  gauge('plait_background_jobs_running', 'Background jobs (GDPR erase, document migration) running in this process', later((q) => q.jobs.running));
  gauge('plait_background_jobs_waiting', 'Background jobs waiting for a slot (on the worker-role holder; JOB_LIMITS)', later((q) => q.jobs.waiting));
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
