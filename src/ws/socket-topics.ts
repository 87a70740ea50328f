// Owns which of this process's sync sockets are on each topic, and which route a published frame takes to them.
import type { TopicPublisher } from '../doc/peer.js';

/**
 * Frames at least this large never go through uWS's publish, which copies a frame into the buffer of every subscriber
 * that cannot take it at once (150 readers that never read held 2.4 GB for one 16 MB update): each member queues it
 * instead (SocketPeer), and the bytes are held once, shared, until every member has written them.
 */
export const QUEUED_FRAME_BYTES = 256 * 1024;

/** What the registry asks of a socket (SocketPeer): to take one frame through its own queue. */
export interface TopicMember {
  enqueue(bytes: Uint8Array): void;
  /** For the gauges: bytes in its uWS buffer, and bytes queued and not yet written. */
  sendSide(): { buffered: number; queued: number };
  /** Queues or closes past the socket's marks (SocketPeer.checkBackpressure). */
  checkBackpressure(): void;
}

/** The part of uWS's app the registry publishes through. */
export interface AppPublisher {
  publish(topic: string, message: Uint8Array, isBinary: boolean): boolean;
}

/**
 * Mirrors the uWS topic membership of the sync sockets, which uWS does not let anyone enumerate, and keeps apart the
 * members that left their uWS topics while frames queue on them (SocketPeer). Small frames to members on their topics
 * keep uWS's native fan-out, the hot path (one JS call per publish, whatever the readers); only large frames and
 * queued members cost a call per member.
 */
export class SocketTopics implements TopicPublisher {
  private readonly members = new Map<string, Set<TopicMember>>();
  /** Members taken off their uWS topics (a frame queued on them), by topic: they get every frame of it through enqueue. */
  private readonly queued = new Map<string, Set<TopicMember>>();

  /** Bytes relayed to each topic since its members' buffers were last checked (`relayed`). */
  private readonly unchecked = new Map<string, number>();

  /** `checkEvery`: bytes relayed to a topic between two checks of its members (backpressureCheckBytes, as the actors). */
  constructor(private readonly app: AppPublisher, private readonly checkEvery: number) {}

  /** Queues `bytes` for every member of `topic`. */
  publish(topic: string, bytes: Uint8Array): void {
    if (this.route(topic, bytes, undefined)) this.app.publish(topic, bytes, true);
  }

  /**
   * Serves the members that do not take `bytes` through uWS's publish (all of them for a large frame, the queued ones
   * else), `sender` excepted. True when the caller is still to publish `bytes` through uWS for the others.
   */
  route(topic: string, bytes: Uint8Array, sender: TopicMember | undefined): boolean {
    if (bytes.length >= QUEUED_FRAME_BYTES) {
      this.each(this.members.get(topic), bytes, sender);
      return false;
    }
    if (this.queued.size > 0) this.each(this.queued.get(topic), bytes, sender);
    return true;
  }

  relayed(topic: string, published: number): void {
    const unchecked = (this.unchecked.get(topic) ?? 0) + published;
    if (unchecked < this.checkEvery) {
      this.unchecked.set(topic, unchecked);
      return;
    }
    this.unchecked.delete(topic);
    const members = this.members.get(topic);
    if (members !== undefined) for (const member of members) member.checkBackpressure();
  }

  /** `member` subscribed to `topic` (queued: it is off its uWS topics now). */
  join(member: TopicMember, topic: string, queued: boolean): void {
    add(this.members, topic, member);
    if (queued) add(this.queued, topic, member);
  }

  /** `member`'s socket is closed: it is on none of `topics` any more. */
  leave(member: TopicMember, topics: readonly string[]): void {
    for (const topic of topics) {
      remove(this.members, topic, member);
      remove(this.queued, topic, member);
      if (!this.members.has(topic)) this.unchecked.delete(topic);
    }
  }

  /** `member` left its uWS `topics` because frames queue on it: from now on it gets their frames through enqueue. */
  detach(member: TopicMember, topics: readonly string[]): void {
    for (const topic of topics) add(this.queued, topic, member);
  }

  /** `member` wrote all it had queued and is back on its uWS `topics`. */
  attach(member: TopicMember, topics: readonly string[]): void {
    for (const topic of topics) remove(this.queued, topic, member);
  }

  /** For the gauges, once per scrape: every socket's buffer, and the sockets with a queue and its bytes. */
  stats(): { buffered: number; queued: number; queuedBytes: number } {
    const seen = new Set<TopicMember>();
    let buffered = 0;
    let queued = 0;
    let queuedBytes = 0;
    for (const set of this.members.values()) {
      for (const member of set) {
        if (seen.has(member)) continue;
        seen.add(member);
        const side = member.sendSide();
        buffered += side.buffered;
        queuedBytes += side.queued;
      }
    }
    for (const set of this.queued.values()) for (const member of set) if (seen.delete(member)) queued++;
    return { buffered, queued, queuedBytes };
  }

  private each(members: Set<TopicMember> | undefined, bytes: Uint8Array, sender: TopicMember | undefined): void {
    // enqueue may close a member (past its limit), which removes it from the set being walked: a Set allows that.
    if (members !== undefined) for (const member of members) if (member !== sender) member.enqueue(bytes);
  }
}

function add(map: Map<string, Set<TopicMember>>, topic: string, member: TopicMember): void {
  const set = map.get(topic);
  if (set === undefined) map.set(topic, new Set([member]));
  else set.add(member);
}

function remove(map: Map<string, Set<TopicMember>>, topic: string, member: TopicMember): void {
  const set = map.get(topic);
  if (set === undefined || !set.delete(member)) return;
  if (set.size === 0) map.delete(topic);
}
