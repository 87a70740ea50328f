// Owns the process-wide instruments the hot paths touch: plain counters and cached prom-client children, no registry.
import { Counter, Histogram } from 'prom-client';

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
  /** Connections opened and closed since start. */
  opened: 0,
  closed: 0,
};

/** Mailbox work refused because a document's mailbox was full (the sender is shed with RESOURCE_EXHAUSTED or close 1013). */
export const mailboxCounts = { shed: 0 };

/** Histograms of the group commits: `rest` is the REST write group commit, `updates` the document update log. */
export const groupCommitSize = new Histogram({
  name: 'plait_group_commit_size',
  help: 'Changes written in one group-commit LMDB transaction',
  labelNames: ['log'] as const,
  buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000],
  registers: [],
});
export const groupCommitSeconds = new Histogram({
  name: 'plait_group_commit_seconds',
  help: 'Time from issuing a group commit to its LMDB commit resolving',
  labelNames: ['log'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
  registers: [],
});

export const restRequests = new Counter({
  name: 'plait_rest_requests_total',
  help: 'REST requests answered, by operation path and HTTP status',
  labelNames: ['operation', 'status'] as const,
  registers: [],
});
export const restSeconds = new Histogram({
  name: 'plait_rest_request_seconds',
  help: 'REST request latency from the first byte to the reply, by operation path',
  labelNames: ['operation'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  registers: [],
});

/** The instruments of one group commit (children looked up once). */
export function groupCommitInstrument(log: 'rest' | 'updates'): { observe(size: number, seconds: number): void } {
  const size = groupCommitSize.labels(log);
  const seconds = groupCommitSeconds.labels(log);
  return {
    observe(changes, elapsed) {
      size.observe(changes);
      seconds.observe(elapsed);
    },
  };
}

/** The instruments of one REST path: its latency child, made once, and a counter child per HTTP status seen. */
export class RestInstrument {
  private readonly latency: Histogram.Internal<'operation'>;
  private readonly byStatus = new Map<number, Counter.Internal>();

  constructor(private readonly operation: string) {
    this.latency = restSeconds.labels(operation);
  }

  observe(httpStatus: number, seconds: number): void {
    let counter = this.byStatus.get(httpStatus);
    if (counter === undefined) this.byStatus.set(httpStatus, (counter = restRequests.labels(this.operation, String(httpStatus))));
    counter.inc();
    this.latency.observe(seconds);
  }
}
