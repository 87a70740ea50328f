// Owns a Peer over one uWS sync socket: corked sends and publishes, the backpressure close, an idempotent end.
import type { WebSocket } from 'uWebSockets.js';
import type { Peer, PeerInfo } from '../doc/peer.js';
import { CLOSE } from '../errors.js';
import { syncCounts } from '../metrics/instruments.js';

/** uWS send(): 2 = dropped because the socket is past maxBackpressure. */
const SEND_DROPPED = 2;

export class SocketPeer implements Peer {
  closed = false;
  readonly sessionId: string;
  readonly userId: string;
  readonly name: string | undefined;
  readonly email: string | undefined;
  readonly editorId: string;
  /** Read by the actor at every update, so a downgrade applies to frames already queued. */
  readOnly: boolean;
  readonly extensions: boolean;

  /** `identity`: who is on the socket, copied from its session when it opens. */
  constructor(private readonly ws: WebSocket<unknown>, identity: PeerInfo, private readonly maxBuffered: number) {
    this.sessionId = identity.sessionId;
    this.userId = identity.userId;
    this.name = identity.name;
    this.email = identity.email;
    this.editorId = identity.editorId;
    this.readOnly = identity.readOnly;
    this.extensions = identity.extensions;
  }

  send(bytes: Uint8Array): boolean {
    if (this.closed) return false;
    let status = 0;
    // Sends happen from the actor, outside any uWS callback: cork so each frame is one write.
    this.ws.cork(() => {
      status = this.ws.send(bytes, true);
    });
    syncCounts.framesSent++;
    if (this.closed) return false;
    // A dropped Yjs frame would leave a gap in the client's document: end it so it reconnects and resyncs.
    if (status === SEND_DROPPED) this.close(CLOSE.BACKPRESSURE, 'backpressure limit reached; reconnect to resync');
    else this.checkBackpressure();
    return !this.closed;
  }

  checkBackpressure(): void {
    if (!this.closed && this.ws.getBufferedAmount() > this.maxBuffered) this.close(CLOSE.BACKPRESSURE, 'backpressure limit reached; reconnect to resync');
  }

  subscribe(topic: string): void {
    if (!this.closed) this.ws.subscribe(topic);
  }

  publish(topic: string, bytes: Uint8Array): boolean {
    // A closed socket would throw; the caller then publishes through another member.
    if (this.closed) return false;
    // uWS excludes this socket and keeps each socket's order; the caller then checks every subscriber's buffer
    // (checkBackpressure), since uWS itself would only drop frames silently or cut the socket without a close frame.
    this.ws.cork(() => this.ws.publish(topic, bytes, true));
    syncCounts.framesPublished++;
    return true;
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.end(code, reason);
  }
}
