// Owns how a document's frames reach its connections: the pub/sub topic names and per-turn merged publishing of store updates.
import * as Y from 'yjs';
import { writeUpdate } from '../ws/protocol.js';
import { documentKeyString, type DocumentKey, type Peer } from './peer.js';

/**
 * The topics of one document, spelled here and nowhere else. Every connection subscribes to `document` (awareness,
 * generic broadcasts) and to its store's topic (Yjs updates of its editor id); `ext=1` connections also to `live`
 * (extension frames, types >= 100). The prefixes keep the three families apart whatever the ids contain.
 */
export const topics = {
  document: (key: DocumentKey): string => `d${documentKeyString(key)}`,
  live: (key: DocumentKey): string => `l${documentKeyString(key)}`,
  store: (key: DocumentKey, editorId: string): string => `s${JSON.stringify([key.apiKey, key.organizationId, key.documentId, editorId])}`,
} as const;

/**
 * Sends `bytes` to every subscriber of `topic`, as uWS's app.publish would. The App belongs to src/server.ts, so the
 * frame goes through one live member instead: its publish reaches the other subscribers, a send reaches itself.
 * `members` are the connections subscribed to `topic` (only the first live one is used). False when none is live.
 */
export function publishToAll(topic: string, bytes: Uint8Array, members: Iterable<Peer>): boolean {
  const all = [...members];
  let published = false;
  for (const peer of all) {
    if (!peer.publish(topic, bytes)) continue;
    peer.send(bytes);
    published = true;
    break;
  }
  checkAll(all);
  return published;
}

/** After a publish: every subscriber past its backpressure limit is closed with 1013 (src/ws/behavior.ts). */
function checkAll(members: Iterable<Peer>): void {
  for (const peer of members) peer.checkBackpressure();
}

interface PendingTopic {
  readonly members: ReadonlySet<Peer>;
  /** Updates by the connection they came from (undefined: the server, e.g. a REST write), in arrival order. */
  readonly bySender: Map<Peer | undefined, Uint8Array[]>;
}

/**
 * Store updates of one event-loop turn, merged into one frame per (store, sender) and published at the end of the
 * turn (as Hocuspocus 4 does). Merging per sender is what keeps the sender out: uWS's ws.publish skips the
 * publishing socket, so each sender's merged frame goes out through its own socket, and updates of the server go to
 * everyone. Yjs updates commute (and out-of-order structs wait as pending), so the order between senders' frames
 * does not matter for convergence; within one sender the merge keeps everything.
 */
export class UpdateFanout {
  /** Made when an update is queued and dropped when flushed: an idle document keeps no table (~200 bytes) for it. */
  private pending: Map<string, PendingTopic> | undefined;
  private scheduled: NodeJS.Immediate | undefined;

  /** `onError`: told when a scheduled flush fails (it runs from a timer, where a throw would end the process). */
  constructor(private readonly onError: (error: unknown) => void) {}

  /** Queues `update` for the subscribers of `topic` except `sender`; `members` are that topic's connections. */
  queue(topic: string, members: ReadonlySet<Peer>, update: Uint8Array, sender: Peer | undefined): void {
    const pending = (this.pending ??= new Map());
    let entry = pending.get(topic);
    if (entry === undefined) pending.set(topic, (entry = { members, bySender: new Map() }));
    const updates = entry.bySender.get(sender);
    if (updates === undefined) entry.bySender.set(sender, [update]);
    else updates.push(update);
    // setImmediate, not a microtask: uWS drains microtasks after each message callback, while every frame read in
    // one poll phase is delivered before the check phase, so this is what gathers a turn's updates.
    this.scheduled ??= setImmediate(() => {
      try {
        this.flush();
      } catch (error) {
        this.pending = undefined;
        this.onError(error);
      }
    });
  }

  /** Publishes everything queued now; callers sending other frames flush first so frames keep the order of changes. */
  flush(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const pending = this.pending;
    if (pending === undefined) return;
    for (const [topic, { members, bySender }] of pending) {
      for (const [sender, updates] of bySender) {
        const frame = writeUpdate(updates.length === 1 ? (updates[0] as Uint8Array) : Y.mergeUpdates(updates));
        // A sender that has gone is unsubscribed already, so publishing to all reaches exactly the others.
        if (sender === undefined || !sender.publish(topic, frame)) publishToAll(topic, frame, members);
      }
      checkAll(members);
    }
    this.pending = undefined;
  }

  /** Drops what is queued (the actor is being disposed; its connections are gone). */
  cancel(): void {
    if (this.scheduled !== undefined) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.pending = undefined;
  }
}
