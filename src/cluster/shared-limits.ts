// Owns the per-key limits' usage shared between cluster nodes: what each node's token buckets took, told to the others.
import type { NatsConnection, Subscription } from 'nats';
import type { Logger } from '../log.js';
import type { SharedUsage } from '../token-buckets.js';
import { clusterCounts } from '../metrics/instruments.js';

/** Every node publishes here what its buckets took since its last message, and reads what the others took. */
export const USAGE_SUBJECT = 'plait.limits.usage';

/** How often a node tells what its buckets took: a key can pass its limit by what the other nodes let through meanwhile. */
export const USAGE_INTERVAL_MS = 250;

/** One message: the sending node, and by limit name the [key, tokens] it took. */
interface UsageMessage {
  readonly n: string;
  readonly u: Record<string, Array<[string, number]>>;
}

/**
 * Without it every per-key rate was per node: behind a balancer spreading requests over N nodes a key got N times its
 * API_KEY_RATE_LIMIT_PER_MINUTE and API_KEY_BYTES_PER_SECOND, and the public limits (per client address, per email
 * address: the login-link mails) N times theirs. Each node now takes what the others took from its own buckets, in
 * debt if need be (src/token-buckets.ts), so the sum over the cluster keeps to each rate, but for what the nodes let
 * through within one interval before they hear of it. Limits on what one process holds (connections, loaded
 * documents, agent tasks) stay per node: they bound that node's memory and pool (docs/cluster.md).
 */
export class SharedLimits {
  private sub: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly nc: NatsConnection,
    private readonly nodeId: string,
    private readonly limits: Readonly<Record<string, SharedUsage>>,
    private readonly log: Logger,
    private readonly intervalMs = USAGE_INTERVAL_MS,
  ) {}

  start(): void {
    this.sub = this.nc.subscribe(USAGE_SUBJECT, {
      callback: (error, msg) => {
        if (error === null) this.received(msg.data);
        else this.log.warn('shared limits: subscription failed', { error: String(error) });
      },
    });
    this.timer = setInterval(() => void this.tell(), this.intervalMs);
    // The interval alone must not keep a stopping process alive.
    this.timer.unref();
  }

  /** Publishes what this node's buckets took since the last message; false (and nothing sent) when they took nothing. */
  tell(): boolean {
    const usage: Record<string, Array<[string, number]>> = {};
    let any = false;
    for (const [name, limit] of Object.entries(this.limits)) {
      const taken = limit.takenSince();
      if (taken.length === 0) continue;
      usage[name] = taken;
      any = true;
    }
    if (!any) return false;
    try {
      this.nc.publish(USAGE_SUBJECT, this.encoder.encode(JSON.stringify({ n: this.nodeId, u: usage } satisfies UsageMessage)));
      return true;
    } catch (error) {
      // NATS closed (a stop under way): the usage of this last interval is not shared, and the nodes' limits hold anyway.
      this.log.debug('shared limits: usage not published', { error: String(error) });
      return false;
    }
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.sub?.unsubscribe();
    this.sub = undefined;
  }

  private received(data: Uint8Array): void {
    let message: UsageMessage;
    try {
      message = JSON.parse(this.decoder.decode(data)) as UsageMessage;
    } catch (error) {
      this.log.warn('shared limits: unreadable usage message', { error: String(error) });
      return;
    }
    if (message.n === this.nodeId || typeof message.u !== 'object' || message.u === null) return;
    for (const [name, entries] of Object.entries(message.u)) {
      const limit = this.limits[name];
      if (limit === undefined || !Array.isArray(entries)) continue;
      for (const entry of entries) {
        if (Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number' && entry[1] > 0) limit.takenElsewhere(entry[0], entry[1]);
      }
    }
    clusterCounts.usageReceived++;
  }
}
