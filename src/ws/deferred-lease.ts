// Owns a sync connection admitted before its document is reachable: it holds the socket's attach and frames until the lease arrives.
import type { RootHint } from '../doc/actor.js';
import type { Peer } from '../doc/peer.js';
import type { ClientMessage } from '../sync/protocol.js';
import type { ConnectionLease, ConnectionTarget } from '../doc/relay-port.js';
import { CLOSE, toAppError } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * Frames a connection may send before its document is reachable (a client sends SyncStep1 and its awareness at
 * once, then its edits): past it the connection is shed with BACKPRESSURE and reconnects. The relay's own wait
 * (src/cluster/relay.ts) holds as many.
 */
export const DEFERRED_FRAMES_MAX = 256;

interface Waiting {
  readonly message: ClientMessage;
  readonly bytes: Uint8Array;
}

/**
 * Why it exists: uWS.js 20.30 writes the 101 of an upgrade answered after real I/O uncorked (a send per header piece
 * and a warning on stderr), and answering it inside `res.cork()` closes about 1 socket in 8 (docs/protocol.md, Known
 * issues). So when the document's lease needs I/O first (a cluster claim or a relay to the owner, an unload in
 * progress), the edge upgrades at once with this lease and the wait happens behind it: the socket's attach and its
 * frames, in order, go to the real target when it arrives; a lease that fails closes the socket instead of refusing
 * the upgrade.
 */
export class DeferredLease implements ConnectionLease, ConnectionTarget {
  private target: ConnectionLease | undefined;
  private peer: Peer | undefined;
  private hint: RootHint = {};
  private waiting: Waiting[] = [];
  private released = false;
  /** Set when the lease failed: the close this socket gets (its open may come after the failure). */
  private failure: { readonly code: number; readonly reason: string } | undefined;

  constructor(leasing: Promise<ConnectionLease>, private readonly log: Logger) {
    leasing.then(
      (lease) => this.arrived(lease),
      (error: unknown) => this.fail(error),
    );
  }

  get actor(): ConnectionTarget {
    return this;
  }

  /** Before the lease arrives no socket counts against the document; its actor checks the limit when it attaches. */
  get connectionCount(): number {
    return this.target?.actor.connectionCount ?? 0;
  }

  attach(peer: Peer, hint: RootHint = {}): void {
    if (this.target !== undefined) {
      this.target.actor.attach(peer, hint);
      return;
    }
    if (this.failure !== undefined) {
      peer.close(this.failure.code, this.failure.reason);
      return;
    }
    this.peer = peer;
    this.hint = hint;
  }

  receive(peer: Peer, message: ClientMessage, bytes: Uint8Array): boolean {
    if (this.target !== undefined) return this.target.actor.receive(peer, message, bytes);
    // The socket is being closed for the failed lease; what it still sends has nowhere to go.
    if (this.failure !== undefined) return true;
    if (this.waiting.length >= DEFERRED_FRAMES_MAX) return false;
    this.waiting.push({ message, bytes });
    return true;
  }

  detach(peer: Peer): void {
    if (this.target !== undefined) {
      this.target.actor.detach(peer);
      return;
    }
    this.peer = undefined;
    this.waiting = [];
  }

  /** The socket closed (after detach): a lease that arrives later is given back at once. */
  release(): void {
    this.released = true;
    this.target?.release();
  }

  private arrived(lease: ConnectionLease): void {
    if (this.released) {
      lease.release();
      return;
    }
    this.target = lease;
    const peer = this.peer;
    const waiting = this.waiting;
    this.peer = undefined;
    this.waiting = [];
    if (peer === undefined) return;
    lease.actor.attach(peer, this.hint);
    for (const { message, bytes } of waiting) {
      if (!lease.actor.receive(peer, message, bytes)) {
        peer.close(CLOSE.BACKPRESSURE, 'the document or its API key is overloaded (MAILBOX_CAPACITY, API_KEY_SYNC_CPU_MS_PER_SECOND); reconnect to resync');
        return;
      }
    }
  }

  private fail(error: unknown): void {
    this.waiting = [];
    const appError = toAppError(error);
    // UNAVAILABLE (a node stopping, an owner taking over) is worth a retry: 1012 makes stock providers reconnect.
    // Anything else is a fault here, logged with its cause; the client still reconnects (1011 is not final).
    if (appError.status === 'INTERNAL') {
      this.log.error('sync connection could not reach its document', { error });
      this.failure = { code: CLOSE.INTERNAL, reason: 'the document could not be opened; reconnect' };
    } else if (appError.status === 'NOT_FOUND') {
      // It waited on a delete of its document (DocumentActors.whileDeleting): final, as for the connections open then.
      this.failure = { code: CLOSE.DOCUMENT_DELETED, reason: appError.message };
    } else {
      this.log.info('sync connection closed before it reached its document', { status: appError.status, message: appError.message });
      this.failure = { code: CLOSE.SERVICE_RESTART, reason: 'the document is not reachable from this node now; reconnect' };
    }
    this.peer?.close(this.failure.code, this.failure.reason);
    this.peer = undefined;
  }
}
