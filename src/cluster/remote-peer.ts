// Owns the owner's side of a relayed connection: a connection on another node, attached to a local actor as a Peer.
import { headers, type MsgHdrs, type NatsConnection } from 'nats';
import type { RootHint } from '../doc/actor.js';
import type { Peer, PeerInfo, TopicPublisher } from '../doc/peer.js';
import type { Lease } from '../doc/lease.js';
import type { DocumentKey } from '../document-key.js';
import { CLOSE } from '../errors.js';
import { readClientMessage } from '../sync/protocol.js';

/** What the owner side needs of the node: NATS, and its own sockets for a remote connection's publishes. */
export interface RemoteDeps {
  readonly nc: NatsConnection;
  readonly local: TopicPublisher;
  /** The subject of a relaying node's inbox (relay.ts spells the subjects). */
  readonly outSubject: (node: string) => string;
}

/** What a relaying node tells the owner about a connection. */
export interface AttachRequest {
  readonly key: DocumentKey;
  readonly from: string;
  readonly hint: RootHint;
  readonly peer: PeerInfo;
}

export function hdrs(fields: Record<string, string>): MsgHdrs {
  const h = headers();
  for (const [name, value] of Object.entries(fields)) h.set(name, value);
  return h;
}

/** Owner side: a connection on another node, attached to a local actor; the actor sees a Peer. */
export class RemoteSession {
  private lease: Lease | undefined;
  private peer: RemotePeer | undefined;
  /** Frames that arrived before the actor was loaded. */
  private queued: Uint8Array[] | undefined = [];
  private gone = false;

  constructor(private readonly deps: RemoteDeps, private readonly request: AttachRequest) {}

  /** The relaying node holding the socket. */
  get from(): string {
    return this.request.from;
  }

  start(lease: Lease, hint: RootHint): void {
    if (this.gone) {
      lease.release();
      return;
    }
    this.lease = lease;
    this.peer = new RemotePeer(this.deps, this.request, () => this.detach());
    lease.actor.attach(this.peer, hint);
    const queued = this.queued ?? [];
    this.queued = undefined;
    for (const bytes of queued) this.frame(bytes);
  }

  frame(bytes: Uint8Array): void {
    if (this.queued !== undefined) {
      this.queued.push(bytes);
      return;
    }
    const { lease, peer } = this;
    if (lease === undefined || peer === undefined || peer.closed) return;
    // Validated again here: the owner trusts no other node's parsing more than a socket's.
    const message = readClientMessage(bytes);
    if (message.kind === 'malformed') {
      peer.close(CLOSE.MALFORMED_FRAME, 'malformed frame');
      return;
    }
    if (!lease.actor.receive(peer, message)) peer.close(CLOSE.BACKPRESSURE, 'the document or its API key is overloaded (MAILBOX_CAPACITY, API_KEY_SYNC_CPU_MS_PER_SECOND); reconnect to resync');
  }

  detach(): void {
    if (this.gone) return;
    this.gone = true;
    const { lease, peer } = this;
    if (lease === undefined || peer === undefined) return;
    peer.closed = true;
    lease.actor.detach(peer);
    lease.release();
  }
}

class RemotePeer implements Peer {
  closed = false;
  readonly sessionId: string;
  readonly userId: string;
  readonly name: string | undefined;
  readonly email: string | undefined;
  readonly editorId: string;
  readonly readOnly: boolean;
  readonly extensions: boolean;
  private readonly out: string;

  constructor(private readonly deps: RemoteDeps, request: AttachRequest, private readonly onClose: () => void) {
    this.sessionId = request.peer.sessionId;
    this.userId = request.peer.userId;
    this.name = request.peer.name;
    this.email = request.peer.email;
    this.editorId = request.peer.editorId;
    this.readOnly = request.peer.readOnly;
    this.extensions = request.peer.extensions;
    this.out = deps.outSubject(request.from);
  }

  /** The socket and its send buffer are on the relaying node, which applies the 1013 limit to it there. */
  checkBackpressure(): void {}

  send(bytes: Uint8Array): boolean {
    if (this.closed) return false;
    this.deps.nc.publish(this.out, bytes, { headers: hdrs({ s: this.sessionId, k: 'send' }) });
    return true;
  }

  subscribe(topic: string): void {
    if (!this.closed) this.deps.nc.publish(this.out, new Uint8Array(0), { headers: hdrs({ s: this.sessionId, k: 'subscribe', t: topic }) });
  }

  publish(topic: string, bytes: Uint8Array): boolean {
    if (this.closed) return false;
    // The owner's own sockets (this connection is not among them); the fan-out then calls the cluster publisher's
    // publishedBy, which reaches the relaying nodes' sockets, skipping this connection's.
    this.deps.local.publish(topic, bytes);
    return true;
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.deps.nc.publish(this.out, new Uint8Array(0), { headers: hdrs({ s: this.sessionId, k: 'close', c: String(code), r: reason }) });
    this.onClose();
  }
}
