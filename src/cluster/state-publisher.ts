// Owns publishing committed transactions to the state stream: commit order, acknowledgement, resending in order.
import { pack } from 'msgpackr';
import type { JetStreamClient, NatsConnection, ObjectStore } from 'nats';
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { ReplicatedOp } from '../store/replication.js';
import type { Fence } from './fence.js';
import { INLINE_LIMIT, STATE_SUBJECT, type TxMessage } from './state-message.js';

/** A write waiting for the stream's acknowledgement. */
interface Outbound {
  readonly n: number;
  readonly ops: readonly ReplicatedOp[];
  readonly payload: Uint8Array;
  readonly fence?: Fence;
  told: boolean;
  acked: boolean;
  readonly resolve: (seq: number) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
}

export interface StatePublisherOptions {
  readonly origin: string;
  readonly log: Logger;
  readonly publishTimeoutMs: number;
  /** Why an acknowledged fenced write must still answer UNAVAILABLE (its lease ended before it landed), or undefined. */
  readonly lateAck?: (fence: Fence | undefined) => Error | undefined;
}

/**
 * Every committed transaction is one message on `plait.state.tx` (the whole message in the object store when it
 * exceeds the inline limit), published in commit order with a message id (origin + counter: a resend inside the
 * stream's duplicate window is dropped by the server). A write resolves once acknowledged; one not acknowledged in
 * time answers UNAVAILABLE and is resent in order until it lands, so every node's cache ends in the stream's order.
 */
export class StatePublisher {
  private readonly js: JetStreamClient;
  private counter = 0;
  private readonly queue: Outbound[] = [];
  private retrying: Promise<void> | undefined;
  private resendFailures = 0;
  private closed = false;
  private readonly inlineLimit: number;
  /** Ops of this boot's messages, kept until the applier passes them (by counter). */
  private readonly sent = new Map<number, readonly ReplicatedOp[]>();
  /** The last send issued (not its acknowledgement): the next send waits for it, so the stream gets commit order. */
  private sending: Promise<unknown> = Promise.resolve();

  constructor(nc: NatsConnection, private readonly blobs: ObjectStore, private readonly options: StatePublisherOptions) {
    this.js = nc.jetstream();
    // Headroom under the server's max_payload for the envelope and headers.
    this.inlineLimit = Math.max(1024, Math.min((nc.info?.max_payload ?? 1024 * 1024) - 16 * 1024, INLINE_LIMIT));
  }

  /** While earlier writes wait to be resent (the stream unreachable), new ones are refused before they commit. */
  refusal(): Error | undefined {
    if (this.closed) return unavailable('the node is stopping');
    if (this.retrying !== undefined) return unavailable('the cluster log (NATS JetStream) is unreachable; earlier writes wait to be resent; retry shortly');
    return undefined;
  }

  /** Writes waiting for their acknowledgement. */
  get unacknowledged(): number {
    return this.queue.length;
  }

  /** The ops of this boot's message `n`, once (the applier reached it). */
  takeOwn(n: number): readonly ReplicatedOp[] | undefined {
    const ops = this.sent.get(n);
    this.sent.delete(n);
    return ops;
  }

  /** Publishes one committed transaction's ops, fenced with the writer's epochs of the documents they write. */
  publish(ops: readonly ReplicatedOp[], fence: Fence | undefined): Promise<void> {
    if (this.closed) return Promise.reject(unavailable('the node is stopping'));
    const n = ++this.counter;
    this.sent.set(n, ops);
    return this.enqueue(n, ops, pack({ o: this.options.origin, n, ops, ...(fence === undefined ? {} : { f: fence }) } satisfies TxMessage), fence).then(() => undefined);
  }

  /**
   * Publishes a claim of `document` under lease `revision` (fencing, src/cluster/fence.ts); `before` gets the message's
   * counter before it is sent. Resolves with the claim's stream sequence once acknowledged.
   */
  claim(document: string, revision: number, before: (n: number) => void): Promise<number> {
    if (this.closed) return Promise.reject(unavailable('the node is stopping'));
    const n = ++this.counter;
    before(n);
    return this.enqueue(n, [], pack({ o: this.options.origin, n, c: document, r: revision } satisfies TxMessage), undefined);
  }

  /** Resolves once every message published so far (resends included) is acknowledged by the stream, or the publisher closed. */
  acknowledged(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  private readonly emptied: Array<() => void> = [];

  /** Queues one message (in call order) and resolves with its stream sequence once acknowledged. */
  private enqueue(n: number, ops: readonly ReplicatedOp[], payload: Uint8Array, fence: Fence | undefined): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const entry: Outbound = {
        n,
        ops,
        payload,
        ...(fence === undefined ? {} : { fence }),
        told: false,
        acked: false,
        resolve,
        reject,
        timer: setTimeout(() => this.tell(entry, unavailable('the cluster log (NATS JetStream) did not acknowledge the write in time; it was not acknowledged, retry')), this.options.publishTimeoutMs),
      };
      this.queue.push(entry);
      // While resending after a failure, everything goes through the resend loop, in order.
      if (this.retrying === undefined) this.transmit(entry).then((seq) => this.acked(entry, seq), (error: unknown) => this.failed(entry, error));
    });
  }

  /** Waits (at most the publish timeout) for unacknowledged writes, then refuses the rest; returns how many were left. */
  async close(): Promise<number> {
    const deadline = Date.now() + this.options.publishTimeoutMs;
    while (this.queue.length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    this.closed = true;
    const unacked = this.queue.length;
    for (const entry of this.queue.splice(0)) this.tell(entry, unavailable('the node is stopping'));
    for (const wake of this.emptied.splice(0)) wake();
    return unacked;
  }

  /**
   * Sends one message and resolves on the stream's acknowledgement. Sends are issued in call order: a large
   * message's blob upload holds back the messages after it (js.publish sends synchronously when called), while
   * acknowledgements are awaited in parallel.
   */
  private transmit(entry: Outbound): Promise<number> {
    const origin = this.options.origin;
    const msgID = `${origin}#${entry.n}`;
    let acknowledged: Promise<{ seq: number }> = Promise.resolve({ seq: 0 });
    const issued = this.sending.then(async () => {
      let data = entry.payload;
      if (data.length > this.inlineLimit) {
        await this.blobs.putBlob({ name: msgID }, data);
        data = pack({ o: origin, n: entry.n, b: msgID, ...(entry.fence === undefined ? {} : { f: entry.fence }) } satisfies TxMessage);
      }
      acknowledged = this.js.publish(STATE_SUBJECT, data, { msgID, timeout: this.options.publishTimeoutMs });
    });
    this.sending = issued.catch((error: unknown) => this.options.log.debug('state send failed', { error: String(error) }));
    return issued.then(() => acknowledged).then((ack) => ack.seq);
  }

  private acked(entry: Outbound, seq: number): void {
    entry.acked = true;
    const at = this.queue.indexOf(entry);
    if (at >= 0) this.queue.splice(at, 1);
    this.tell(entry, this.options.lateAck?.(entry.fence), seq);
    if (this.queue.length === 0) for (const wake of this.emptied.splice(0)) wake();
  }

  private failed(entry: Outbound, error: unknown): void {
    if (entry.acked) return;
    this.tell(entry, unavailable('the cluster log (NATS JetStream) is unreachable; the write was not acknowledged, retry'));
    if (this.retrying !== undefined) return;
    this.options.log.warn('state publish failed; resending in order', { error: String(error), queued: this.queue.length });
    this.retrying = this.resend().finally(() => (this.retrying = undefined));
  }

  /** Resends every unacknowledged message in order, one at a time, until the queue is empty (or the node closes). */
  private async resend(): Promise<void> {
    while (this.queue.length > 0) {
      const entry = this.queue[0];
      if (entry === undefined) break;
      if (entry.acked) {
        this.queue.shift();
        continue;
      }
      try {
        this.acked(entry, await this.transmit(entry));
      } catch (error) {
        this.tell(entry, unavailable('the cluster log (NATS JetStream) is unreachable; the write was not acknowledged, retry'));
        if (this.closed) return;
        if (++this.resendFailures % 20 === 1) this.options.log.warn('state resend failed; writes wait behind it', { error: String(error), queued: this.queue.length, failures: this.resendFailures });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private tell(entry: Outbound, error: unknown, seq = 0): void {
    if (entry.told) return;
    entry.told = true;
    clearTimeout(entry.timer);
    if (error === undefined) entry.resolve(seq);
    else entry.reject(error);
  }
}
