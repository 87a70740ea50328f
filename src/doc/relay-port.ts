// Owns the port through which a sync connection reaches a document another process owns (src/cluster/relay.ts implements it).
import type { DocumentKey } from '../document-key.js';
import type { ClientMessage } from '../sync/protocol.js';
import type { RootHint } from './actor.js';
import type { Peer } from './peer.js';

/** What the sync edge needs of a document for one connection: a local DocumentActor, or a relay to the owner. */
export interface ConnectionTarget {
  readonly connectionCount: number;
  attach(peer: Peer, hint?: RootHint): void;
  /** A validated frame; `bytes` is the frame as received (a relay forwards it as is). False: shed the connection. */
  receive(peer: Peer, message: ClientMessage, bytes: Uint8Array): boolean;
  detach(peer: Peer): void;
}

/** Keeps a target usable until released (a DocumentActors lease, or a relay session). */
export interface ConnectionLease {
  readonly actor: ConnectionTarget;
  release(): void;
}

/** Connects a socket on this process to the document's owner `owner` (a NotOwnerError named it). */
export interface DocumentRelay {
  connect(key: DocumentKey, owner: string): Promise<ConnectionLease>;
}
