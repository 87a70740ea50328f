// Owns the contract between a document actor and one connection: what the actor may ask of a socket it does not own.
import type { DocumentKey } from '../document-key.js';

/** Who made a change, recorded as a store's lastUpdatedBy / sessionId. */
export interface ChangeOrigin {
  readonly userId: string;
  readonly sessionId: string | null;
}

/** A connected client as the actor sees it; the edge (src/ws) implements it over a uWS socket. */
export interface Peer extends ChangeOrigin {
  readonly sessionId: string;
  readonly editorId: string;
  /** From the token's userProperties, for presence. */
  readonly name?: string | undefined;
  readonly email?: string | undefined;
  /** Viewer connections: they receive everything; their document updates are never applied. */
  readonly readOnly: boolean;
  /** The client asked for Plait extension frames (types >= 100) with `?ext=1`. */
  readonly extensions: boolean;
  /** Queues one frame; false when the socket is gone or was just closed for exceeding its backpressure limit. */
  send(bytes: Uint8Array): boolean;
  /** Joins a pub/sub topic (src/doc/fanout.ts names them); a socket leaves all its topics when it closes. */
  subscribe(topic: string): void;
  /**
   * Queues one frame for every other subscriber of `topic` (uWS ws.publish skips the publishing socket; slow
   * subscribers are closed at their backpressure limit); false when this socket is gone, so nothing was published.
   */
  publish(topic: string, bytes: Uint8Array): boolean;
  /** Closes the connection with BACKPRESSURE (1013) when its send buffer is past the limit; called after every publish. */
  checkBackpressure(): void;
  /** Ends the connection with a close code from CLOSE (src/errors.ts). Idempotent. */
  close(code: number, reason: string): void;
}

/**
 * Sends server-originated frames to every subscriber of a topic. The edge's composition root implements it with
 * uWS's app.publish (src/server.ts), so the core never needs a member socket to reach the others.
 */
export interface TopicPublisher {
  /** Queues `bytes` for every subscriber of `topic` (slow ones are closed at their backpressure limit, as for send). */
  publish(topic: string, bytes: Uint8Array): void;
  /**
   * `sender` published `bytes` to `topic` through its own socket (which reaches this process's subscribers but
   * itself). A cluster relays it to the other nodes' subscribers, skipping the sender there too; one process: absent.
   */
  publishedBy?(topic: string, bytes: Uint8Array, sender: Peer): void;
  /**
   * `published` bytes went to `topic` from no actor of this process (a cluster's relaying node passing on the owner's
   * frames): the topic's sockets are checked against their backpressure limit as an actor checks its own.
   */
  relayed?(topic: string, published: number): void;
}

/** What other features may read about a document's connections. */
export interface PeerInfo {
  readonly sessionId: string;
  readonly userId: string;
  readonly name?: string | undefined;
  readonly email?: string | undefined;
  readonly editorId: string;
  readonly readOnly: boolean;
  readonly extensions: boolean;
}

/** Told inside the document's mailbox when a connection joins (after SyncStep1 went out) or leaves. */
export interface ConnectionListener {
  joined(peer: PeerInfo, actor: DocumentActorView): void;
  left(peer: PeerInfo, actor: DocumentActorView): void;
}

/** The part of a DocumentActor a listener may use (run, broadcast, sendTo), without importing the actor. */
export interface DocumentActorView {
  readonly key: DocumentKey;
  run<T>(task: () => T | Promise<T>): Promise<T>;
  broadcast(bytes: Uint8Array): number;
  sendTo(sessionId: string, bytes: Uint8Array): boolean;
}

/**
 * Loads a document's actor and keeps it loaded while `use` runs (DocumentActors.use): how comments, presence and live
 * state reach the actor without importing the registry. They need of it only the DocumentActorView port.
 */
export interface DocumentActorLoader {
  use<T>(key: DocumentKey, use: (actor: DocumentActorView) => Promise<T> | T): Promise<T>;
  /** Tells `listener` after an actor was unloaded (DocumentActors.onUnloaded), so nothing kept beside it stays reachable. */
  onUnloaded?(listener: (key: DocumentKey) => void): void;
  /**
   * Adds what a module holds in memory beside an actor (its document's comment threads and presence) to the bytes the
   * loaded-documents budget counts for it (DocumentActors.measureBeside); `measure` answers 0 for an actor it holds
   * nothing for, and must be cheap: it is asked at every lease.
   */
  measureBeside?(measure: (actor: DocumentActorView) => number): void;
}

/** lastUpdatedBy of changes made through the REST CRDT operations, which carry no user. */
export const REST_ORIGIN: ChangeOrigin = Object.freeze({ userId: 'rest-api', sessionId: null });
