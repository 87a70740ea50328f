// Owns the port of once-only background work: whether this process runs the shared durable queues now, and wake-ups.

/** What a wake-up announces: new outbox events, or a submitted background job. */
export type WorkKind = 'outbox' | 'jobs';

/**
 * The background work that reads shared durable rows (the outbox dispatcher, the delivery queue, background jobs,
 * the queue's pruning, recovery of interrupted agent runs) runs in one process at a time: the holder of this role.
 * One process holds it always (`LocalWorkerRole`); in a cluster, src/cluster/worker-lease.ts implements it with a
 * lease in NATS JetStream KV, and server.ts wires it. The core never imports the cluster.
 */
export interface WorkerRole {
  /** Whether this process may run the work now (no network; checked again before each send). */
  held(): boolean;
  /** Told when this process gains (true) or loses (false) the role; a loser must stop before anything else is sent. */
  onChange(listener: (held: boolean) => void): void;
  /** After a commit that made work: wakes the holder, wherever it runs, so it need not wait for its next scan. */
  wake(kind: WorkKind): void;
  /** Told when any process announced work of `kind` (the holder acts; the others ignore it). */
  onWake(listener: (kind: WorkKind) => void): void;
  /**
   * Whether a wake-up always reaches the holder after the rows it announces can be read there. Then polling for rows
   * is only the backstop for a lost wake-up and may be slow (one process: the wake-up follows the local commit); else
   * (a cluster: the wake-up travels on core NATS and may overtake the row on the state stream) a short poll finds it.
   */
  readonly wakesFollowRows: boolean;
  /** Whether `processId` (a node id recorded with an in-process task, e.g. an agent run) is still alive. */
  alive(processId: string): Promise<boolean>;
  /** This process's id as recorded with its in-process tasks. */
  readonly processId: string;
}

/** One process: it holds the role for ever; a wake-up goes to its own listeners. */
export class LocalWorkerRole implements WorkerRole {
  private readonly wakeListeners: Array<(kind: WorkKind) => void> = [];
  readonly processId = 'local';
  readonly wakesFollowRows = true;

  held(): boolean {
    return true;
  }

  onChange(_listener: (held: boolean) => void): void {
    // Never changes (a subclass that does tells its listeners: test/http/job-backlog.test.ts).
  }

  wake(kind: WorkKind): void {
    for (const listener of this.wakeListeners) listener(kind);
  }

  onWake(listener: (kind: WorkKind) => void): void {
    this.wakeListeners.push(listener);
  }

  /** Only this process exists; anything recorded by another id was left by an earlier run of it. */
  alive(processId: string): Promise<boolean> {
    return Promise.resolve(processId === this.processId);
  }
}
