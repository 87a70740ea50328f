// Owns the cluster's worker role (one node runs the shared background work, by a JetStream KV lease), node liveness and wake-ups.
import type { NatsConnection, Subscription } from 'nats';
import type { Logger } from '../log.js';
import type { WorkKind, WorkerRole } from '../worker-role.js';
import { Leases, ROLE_BUCKET } from './leases.js';

/** Wake-ups after a commit that made work (`outbox`, `jobs`), and `released` when the holder hands the role over. */
export const WORK_SUBJECT = 'plait.work.wake';
/** The one key of the worker role in `ROLE_BUCKET`. Lease keys are base64url, so no other key can collide with it. */
export const WORKER_ROLE = 'role:worker';
/** Each node holds its own liveness key while it runs: in-process tasks it recorded (agent runs) are its until it lapses. */
export const nodeLivenessKey = (nodeId: string): string => `node:${nodeId}`;

const KINDS: ReadonlySet<string> = new Set<WorkKind>(['outbox', 'jobs']);

export interface WorkerLeaseOptions {
  readonly nodeId: string;
  readonly leaseMs: number;
  readonly replicas: number;
  readonly log: Logger;
}

/**
 * The WorkerRole of one node. Every third of the lease time a node that does not hold the role tries to take it (the
 * lease's compare-and-set lets exactly one win); the holder renews it with the other leases of `ROLE_BUCKET`. A dead
 * holder's lease lapses within the lease time, so another node takes over within 4/3 of it; a graceful stop releases
 * it and says so on `WORK_SUBJECT`, so another node takes it at once. Losing it (renewal refused or too late) tells the
 * `onChange` listeners at once, and `held()` turns false when the lease's validity ends even before that.
 */
export class WorkerLease implements WorkerRole {
  private holding = false;
  private stopped = false;
  private taking: Promise<void> | undefined;
  private readonly changeListeners: Array<(held: boolean) => void> = [];
  private readonly wakeListeners: Array<(kind: WorkKind) => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly sub: Subscription;
  /** A wake-up is published after the local commit, the row sent on the state stream: the wake-up may arrive first. */
  readonly wakesFollowRows = false;

  private constructor(private readonly roles: Leases, private readonly nc: NatsConnection, private readonly options: WorkerLeaseOptions) {
    roles.onLost((key) => {
      if (key === WORKER_ROLE) this.set(false);
      // Our liveness lapsed (NATS away too long): take it back, or a worker would count our runs as interrupted.
      else if (key === nodeLivenessKey(options.nodeId) && !this.stopped) void this.claimLiveness();
    });
    this.sub = nc.subscribe(WORK_SUBJECT, {
      callback: (error, msg) => {
        if (error !== null) return options.log.warn('work wake-up subscription failed', { error: String(error) });
        const kind = new TextDecoder().decode(msg.data);
        if (kind === 'released') void this.take();
        else if (KINDS.has(kind)) for (const listener of this.wakeListeners) listener(kind as WorkKind);
      },
    });
  }

  /**
   * Binds the role bucket and takes this node's liveness key; the role itself is tried from `begin()`. A lease value
   * names only the node id, so a restart under the same NODE_ID takes its own keys back at once; two live nodes must
   * never share a NODE_ID.
   */
  static async start(nc: NatsConnection, options: WorkerLeaseOptions): Promise<WorkerLease> {
    const roles = await Leases.open(nc, { bucket: ROLE_BUCKET, nodeId: options.nodeId, leaseMs: options.leaseMs, replicas: options.replicas, log: options.log });
    const lease = new WorkerLease(roles, nc, options);
    await lease.claimLiveness();
    return lease;
  }

  /**
   * Starts competing for the role: now, then every third of the lease time while another node holds it. Called once
   * the server is up, so a node never holds the role while its start (which may block for seconds) keeps it from
   * working, or from renewing the lease in time.
   */
  async begin(): Promise<void> {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = setInterval(() => void this.take(), Math.max(100, Math.floor(this.options.leaseMs / 3)));
    this.timer.unref();
    await this.take();
  }

  get processId(): string {
    return this.options.nodeId;
  }

  held(): boolean {
    return this.holding && !this.stopped && this.roles.owns(WORKER_ROLE);
  }

  onChange(listener: (held: boolean) => void): void {
    this.changeListeners.push(listener);
  }

  wake(kind: WorkKind): void {
    try {
      this.nc.publish(WORK_SUBJECT, new TextEncoder().encode(kind));
    } catch (error) {
      // NATS closed: the holder's periodic scan finds the rows anyway.
      this.options.log.warn('could not publish a work wake-up', { kind, error: String(error) });
    }
  }

  onWake(listener: (kind: WorkKind) => void): void {
    this.wakeListeners.push(listener);
  }

  async alive(processId: string): Promise<boolean> {
    if (processId === this.options.nodeId) return true;
    return (await this.roles.owner(nodeLivenessKey(processId))) === processId;
  }

  /**
   * Graceful stop, after this node's background work has stopped: gives the role up and says so, so another node
   * takes it at once. From here on this node never takes it again.
   */
  async release(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.taking;
    if (!this.holding) return;
    this.set(false);
    await this.roles.release(WORKER_ROLE);
    this.wakeAll('released');
  }

  /** Releases the role (if still held) and this node's liveness, and stops listening. */
  async close(): Promise<void> {
    await this.release();
    this.sub.unsubscribe();
    await this.roles.close();
  }

  private wakeAll(what: string): void {
    try {
      this.nc.publish(WORK_SUBJECT, new TextEncoder().encode(what));
    } catch (error) {
      this.options.log.warn('could not announce the worker role release; it is taken at the next try', { error: String(error) });
    }
  }

  private take(): Promise<void> {
    if (this.stopped || this.held()) return Promise.resolve();
    this.taking ??= (async () => {
      try {
        const claim = await this.roles.claim(WORKER_ROLE);
        if (claim.mine && !this.stopped) this.set(true);
        else if (claim.mine) await this.roles.release(WORKER_ROLE);
      } catch (error) {
        this.options.log.warn('could not take the worker role; retrying', { error: String(error) });
      }
    })().finally(() => (this.taking = undefined));
    return this.taking;
  }

  private async claimLiveness(): Promise<void> {
    try {
      const claim = await this.roles.claim(nodeLivenessKey(this.options.nodeId));
      if (!claim.mine) this.options.log.error('another node took this node\'s NODE_ID', { nodeId: this.options.nodeId, by: claim.owner });
    } catch (error) {
      this.options.log.warn('could not renew this node\'s liveness; retrying', { error: String(error) });
      setTimeout(() => void (this.stopped ? undefined : this.claimLiveness()), Math.max(100, Math.floor(this.options.leaseMs / 3))).unref();
    }
  }

  private set(held: boolean): void {
    if (held === this.holding) return;
    this.holding = held;
    if (held) this.options.log.info('worker role taken: this node runs the outbox, deliveries and jobs', { nodeId: this.options.nodeId });
    else this.options.log.warn('worker role given up: this node stops the background work', { nodeId: this.options.nodeId });
    for (const listener of this.changeListeners) listener(held);
  }
}
