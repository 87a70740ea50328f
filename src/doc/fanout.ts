// Owns how a document's frames reach its connections: the pub/sub topic names and per-turn merged publishing of store updates.
import * as Y from 'yjs';
import { writeUpdate } from '../sync/protocol.js';
import { concatUpdates } from '../sync/update-concat.js';
import { type Peer, type TopicPublisher } from './peer.js';
import { documentKeyString, type DocumentKey } from '../document-key.js';

/**
 * The topics of one document, spelled here and nowhere else. Every connection subscribes to its store's topic only
 * (Yjs updates of its editor id, and the document's awareness and broadcasts, published once to each store's topic);
 * `ext=1` connections also to `live` (extension frames, types >= 100). One topic per connection, not a document topic
 * beside it: a uWS subscriber of two topics costs a merge of both topics' queues at every drain (bench/README,
 * "Fan-out CPU per delivery"). The prefixes keep the families apart whatever the ids contain.
 */
export const topics = {
  live: (key: DocumentKey): string => `l${documentKeyString(key)}`,
  store: (key: DocumentKey, editorId: string): string => `s${documentKeyString(key, editorId)}`,
} as const;

/** The topics a connection of `editorId` is subscribed to (DocumentActor.attach; a cluster's relaying node mirrors them). */
export function connectionTopics(key: DocumentKey, editorId: string, extensions: boolean): string[] {
  return extensions ? [topics.store(key, editorId), topics.live(key)] : [topics.store(key, editorId)];
}

/** Where the fan-out publishes: the document's actor, which also closes subscribers past their backpressure limit. */
export interface FanoutTarget extends TopicPublisher {
  /** After a flush of `published` bytes: connections past their backpressure limit are closed with 1013 (src/ws/behavior.ts). */
  checkBackpressure(published: number): void;
  /** A scheduled flush failed (it runs from a timer, where a throw would end the process). */
  fanoutFailed(error: unknown): void;
}

/** What one sender has queued for one topic in this turn. */
interface Queued {
  /** In arrival order. */
  readonly updates: Uint8Array[];
  /** The client's own frame of the first update, published as it came while it is the only one; dropped at the second. */
  frame: Uint8Array | undefined;
}

/** What updates are queued for: a store, whose topic name is built once per turn at the flush, not per update. */
export interface UpdateStream {
  /** The topic its updates go to (topics.store). */
  topic(): string;
}

interface PendingTopic {
  /** By the connection the updates came from (undefined: the server, e.g. a REST write). */
  readonly bySender: Map<Peer | undefined, Queued>;
}

/**
 * Store updates of one event-loop turn, merged into one frame per (store, sender) and published at the end of the
 * turn (as Hocuspocus 4 does). Merging per sender is what keeps the sender out: uWS's ws.publish skips the
 * publishing socket, so each sender's merged frame goes out through its own socket, and updates of the server go to
 * everyone. Yjs updates commute (and out-of-order structs wait as pending), so the order between senders' frames
 * does not matter for convergence; within one sender the merge keeps everything. A sender's updates are joined by
 * their bytes when they are one client's consecutive structs (src/sync/update-concat.ts), else by Y.mergeUpdates.
 */
export class UpdateFanout {
  /** Made when an update is queued and dropped when flushed: an idle document keeps no table (~200 bytes) for it. */
  private pending: Map<UpdateStream, PendingTopic> | undefined;
  private scheduled: NodeJS.Immediate | undefined;

  constructor(private readonly publisher: FanoutTarget) {}

  /**
   * Queues `update` for the subscribers of `stream`'s topic except `sender`. `frame`, when given, is the sync frame
   * holding exactly `update` as the client sent it: published unchanged if nothing else of that sender joins it this turn.
   */
  queue(stream: UpdateStream, update: Uint8Array, sender: Peer | undefined, frame?: Uint8Array): void {
    const pending = (this.pending ??= new Map());
    let entry = pending.get(stream);
    if (entry === undefined) pending.set(stream, (entry = { bySender: new Map() }));
    const queued = entry.bySender.get(sender);
    if (queued === undefined) entry.bySender.set(sender, { updates: [update], frame });
    else {
      queued.updates.push(update);
      queued.frame = undefined;
    }
    // setImmediate, not a microtask: uWS drains microtasks after each message callback, while every frame read in
    // one poll phase is delivered before the check phase, so this is what gathers a turn's updates. The fan-out is
    // passed to a function made once, not closed over by one made per turn.
    this.scheduled ??= setImmediate(flushScheduled, this);
  }

  /** @internal The turn's scheduled flush: it runs from the immediate queue, where a throw would end the process. */
  scheduledFlush(): void {
    try {
      this.flush();
    } catch (error) {
      this.pending = undefined;
      this.publisher.fanoutFailed(error);
    }
  }

  /** Publishes everything queued now; callers sending other frames flush first so frames keep the order of changes. */
  flush(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const pending = this.pending;
    if (pending === undefined) return;
    let published = 0;
    for (const [stream, { bySender }] of pending) {
      const topic = stream.topic();
      for (const [sender, { updates, frame: asSent }] of bySender) {
        const frame = asSent ?? writeUpdate(updates.length === 1 ? (updates[0] as Uint8Array) : (concatUpdates(updates) ?? Y.mergeUpdates(updates)));
        published += frame.length;
        // A sender that has gone is unsubscribed already, so publishing to all reaches exactly the others.
        if (sender === undefined || !sender.publish(topic, frame)) this.publisher.publish(topic, frame);
        else this.publisher.publishedBy?.(topic, frame, sender);
      }
    }
    this.pending = undefined;
    this.publisher.checkBackpressure(published);
  }

  /** Drops what is queued (the actor is being disposed; its connections are gone). */
  cancel(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.pending = undefined;
  }
}

function flushScheduled(fanout: UpdateFanout): void {
  fanout.scheduledFlush();
}

/**
 * How many bytes a document publishes between two checks of its sockets' buffers: a socket's buffer grows only by what
 * is queued for it, so none is more than this past WS_MAX_BACKPRESSURE_BYTES when it is closed, well inside uWS's own
 * backstop (twice the limit; src/ws/behavior.ts). Checking after every publish cost one native call per connection per
 * update (issue 18).
 */
export function backpressureCheckBytes(limit: number): number {
  return Math.min(64 * 1024, Math.floor(limit / 4));
}
