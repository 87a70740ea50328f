// Owns the process-wide instruments the hot paths touch: plain numbers in cells made once, exported when scraped.

/**
 * Counts bumped on every sync frame: plain numbers (an increment is one add), turned into Prometheus counters at
 * scrape time by src/metrics/registry.ts.
 */
export const syncCounts = {
  /** Frames received on sync sockets (binary, before validation). */
  framesIn: 0,
  /** Frames the server sent to one socket. */
  framesSent: 0,
  /** Frames published to a topic (each reaches every other subscriber of it). */
  framesPublished: 0,
  /** Frames held in one socket's queue instead of copied into its buffer at once (src/ws/socket-peer.ts). */
  framesQueued: 0,
  /** Connections opened and closed since start. */
  opened: 0,
  closed: 0,
};

/** Cluster mode: messages of other nodes' limit usage this node applied to its buckets (src/cluster/shared-limits.ts). */
export const clusterCounts = { usageReceived: 0 };

/** Documents the loaded-documents budget unloaded before DOC_IDLE_UNLOAD_MS (src/doc/loaded-budget.ts). */
export const budgetCounts = { unloadedEarly: 0 };

/** Mailbox work refused because a document's mailbox was full (the sender is shed with RESOURCE_EXHAUSTED or close 1013). */
export const mailboxCounts = { shed: 0 };

/**
 * Requests refused by a limit on what one workspace may take, or on shared work (docs/limits.md, "Shared work, per
 * workspace"), by limit: the operator's sign of a workspace at its bounds. Plain numbers, exported at scrape.
 */
export const limitRefusals = {
  /** Sync upgrades past MAX_CONNECTIONS_PER_KEY. */
  sync_connections_per_key: 0,
  /** Agent tasks past AGENT_TASKS_PER_KEY. */
  agent_tasks_per_key: 0,
  /** Agent tasks past AGENT_QUEUE_LIMIT, whatever their key. */
  agent_queue: 0,
  /** Advanced webhook endpoints past MAX_ENDPOINTS_PER_KEY. */
  webhook_endpoints_per_key: 0,
  /** REST requests that would load a document past MAX_LOADED_DOCUMENTS_PER_KEY (or its bytes) when none of that key's could be unloaded. */
  loaded_documents_per_key: 0,
  /** Sync edits and REST CRDT writes that would have taken a document past MAX_DOCUMENT_BYTES. */
  document_bytes: 0,
  /** REST requests (429) and sync frames (close 1013) past API_KEY_BYTES_PER_SECOND. */
  api_key_bytes: 0,
  /** Awareness frames dropped past API_KEY_AWARENESS_BYTES_PER_SECOND. */
  api_key_awareness_bytes: 0,
  /** Sync messages (close 1013) past API_KEY_SYNC_MESSAGES_PER_SECOND. */
  api_key_sync_messages: 0,
  /** Sync frames (close 1013) of an API key past its API_KEY_SYNC_CPU_MS_PER_SECOND. */
  api_key_sync_cpu: 0,
  /** Comment writes that would have taken a thread past MAX_COMMENTS_PER_THREAD or MAX_COMMENT_THREAD_BYTES. */
  comment_thread_size: 0,
  /** Presence adds and updates refused, and sync connections' users left unlisted, past MAX_PRESENCE_USERS_PER_DOCUMENT. */
  presence_users: 0,
  /** GDPR erase and document migration requests refused past MAX_PENDING_JOBS_PER_KEY unfinished jobs of their key. */
  pending_jobs_per_key: 0,
};

type Labels = Readonly<Record<string, string>>;

/** One series' value as prom-client's Registry prints it (`metricName` overrides the family name: `_bucket`, `_sum`). */
export interface ExportedValue {
  readonly value: number;
  readonly labels: Labels;
  readonly metricName?: string;
}

/** What a family hands the registry when scraped: the shape of prom-client's `MetricObject`. */
export interface ExportedFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  readonly values: readonly ExportedValue[];
}

/** A histogram series: per-bucket counts (not cumulative until exported), sum and count. Observing allocates nothing. */
export class HistogramCell {
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        return;
      }
    }
  }

  export(name: string, labels: Labels, into: ExportedValue[]): void {
    let cumulative = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      cumulative += this.counts[i] as number;
      into.push({ metricName: `${name}_bucket`, labels: { ...labels, le: String(this.bounds[i]) }, value: cumulative });
    }
    into.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: this.count });
    into.push({ metricName: `${name}_sum`, labels, value: this.sum });
    into.push({ metricName: `${name}_count`, labels, value: this.count });
  }
}

/** A counter series: one number. */
export interface CounterCell {
  value: number;
}

/** A labelled family of cells; `child` makes a series once (callers keep it), `collect` builds the scrape. */
abstract class Family<C> {
  private readonly children = new Map<string, { labels: Labels; cell: C }>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  protected abstract make(): C;
  protected abstract exportCell(cell: C, labels: Labels, into: ExportedValue[]): void;
  abstract readonly type: ExportedFamily['type'];

  child(labels: Labels): C {
    const key = JSON.stringify(labels);
    let entry = this.children.get(key);
    if (entry === undefined) this.children.set(key, (entry = { labels, cell: this.make() }));
    return entry.cell;
  }

  /** prom-client's Registry calls get() on each registered metric at scrape time. */
  get(): ExportedFamily {
    const values: ExportedValue[] = [];
    for (const { labels, cell } of this.children.values()) this.exportCell(cell, labels, values);
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  readonly type = 'histogram';

  constructor(name: string, help: string, private readonly bounds: readonly number[]) {
    super(name, help);
  }

  protected make(): HistogramCell {
    return new HistogramCell(this.bounds);
  }

  protected exportCell(cell: HistogramCell, labels: Labels, into: ExportedValue[]): void {
    cell.export(this.name, labels, into);
  }
}

export class CounterFamily extends Family<CounterCell> {
  readonly type = 'counter';

  protected make(): CounterCell {
    return { value: 0 };
  }

  protected exportCell(cell: CounterCell, labels: Labels, into: ExportedValue[]): void {
    into.push({ labels, value: cell.value });
  }
}

const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** Histograms of the group commits: `rest` is the REST write group commit, `updates` the document update log. */
export const groupCommitSize = new HistogramFamily('plait_group_commit_size', 'Changes written in one group-commit LMDB transaction', [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000,
]);
export const groupCommitSeconds = new HistogramFamily('plait_group_commit_seconds', 'Time from issuing a group commit to its LMDB commit resolving', SECONDS);

export const restRequests = new CounterFamily('plait_rest_requests_total', 'REST requests answered, by operation path and HTTP status');
export const restSeconds = new HistogramFamily('plait_rest_request_seconds', 'REST request latency from the first byte to the reply, by operation path', SECONDS);

/** The instruments of one group commit (series made once). */
export function groupCommitInstrument(log: 'rest' | 'updates'): { observe(size: number, seconds: number): void } {
  const size = groupCommitSize.child({ log });
  const seconds = groupCommitSeconds.child({ log });
  return {
    observe(changes, elapsed) {
      size.observe(changes);
      seconds.observe(elapsed);
    },
  };
}

/** The instruments of one REST path: its latency series, made once, and a counter series per HTTP status seen. */
export class RestInstrument {
  private readonly latency: HistogramCell;
  private readonly byStatus = new Map<number, CounterCell>();

  constructor(private readonly operation: string) {
    this.latency = restSeconds.child({ operation });
  }

  observe(httpStatus: number, seconds: number): void {
    let counter = this.byStatus.get(httpStatus);
    if (counter === undefined) this.byStatus.set(httpStatus, (counter = restRequests.child({ operation: this.operation, status: String(httpStatus) })));
    counter.value++;
    this.latency.observe(seconds);
  }
}
