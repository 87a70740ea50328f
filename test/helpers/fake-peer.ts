// Owns an in-memory stand-in for sync sockets: a Peer that records frames and a pub/sub hub with uWS's publish semantics.
import type { Peer, TopicPublisher } from '../../src/doc/peer.js';

/**
 * Topics to subscribers, like uWS's topic tree: a socket's publish skips that socket, the App's (no `from`) reaches
 * every subscriber, a closed socket leaves every topic.
 */
export class FakeHub implements TopicPublisher {
  private readonly topics = new Map<string, Set<FakePeer>>();

  subscribe(topic: string, peer: FakePeer): void {
    let members = this.topics.get(topic);
    if (members === undefined) this.topics.set(topic, (members = new Set()));
    members.add(peer);
  }

  publish(topic: string, bytes: Uint8Array, from?: FakePeer): void {
    for (const peer of this.topics.get(topic) ?? []) if (peer !== from) peer.frames.push(bytes);
  }

  leave(peer: FakePeer): void {
    for (const members of this.topics.values()) members.delete(peer);
  }
}

export class FakePeer implements Peer {
  readonly frames: Uint8Array[] = [];
  closedWith: number | undefined;
  readOnly = false;
  extensions = false;
  constructor(
    readonly sessionId: string,
    readonly userId = 'u1',
    readonly editorId = 'main',
    private readonly hub = new FakeHub(),
  ) {}

  send(bytes: Uint8Array): boolean {
    if (this.closedWith !== undefined) return false;
    this.frames.push(bytes);
    return true;
  }

  subscribe(topic: string): void {
    if (this.closedWith === undefined) this.hub.subscribe(topic, this);
  }

  publish(topic: string, bytes: Uint8Array): boolean {
    if (this.closedWith !== undefined) return false;
    this.hub.publish(topic, bytes, this);
    return true;
  }

  checkBackpressure(): void {
    // Frames land in an array at once: nothing is ever buffered, so the limit is never reached.
  }

  close(code: number): void {
    this.closedWith ??= code;
    this.hub.leave(this);
  }
}
