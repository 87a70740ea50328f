// Owns the rules on client awareness: who may change which client id's state, how large a state may be, how often.
import * as encoding from 'lib0/encoding';
import { utf8Bytes } from '../limits.js';
import type { AwarenessEntry } from '../sync/protocol.js';
import type { Peer } from './peer.js';

export interface AwarenessLimits {
  /** Largest state (as JSON) one client id may announce; larger entries are dropped. */
  readonly awarenessMaxStateBytes: number;
  /** Awareness frames one connection may send per second (a burst of as many); the excess is dropped. */
  readonly awarenessUpdatesPerSecond: number;
}

/** Client ids one connection may own: a provider uses one; a page with a few providers on one socket is rare. */
export const MAX_AWARENESS_CLIENTS_PER_CONNECTION = 8;

interface PeerAwareness {
  readonly owned: Set<number>;
  tokens: number;
  refilledAt: number;
}

/** Why frames or entries were dropped, for the debug log and tests. */
export type AwarenessRefusal = 'rate' | 'size' | 'not-owner' | 'too-many-clients' | 'fan-out';

/**
 * One per document (made with its awareness). A client id belongs to the first connection that announces it, until
 * that connection closes; entries for a client id another connection owns are dropped, so no connection (a viewer's
 * included) can overwrite or remove someone else's cursor. Frames past the per-connection rate are dropped whole.
 */
export class AwarenessGuard {
  private readonly owners = new Map<number, Peer>();
  private readonly peers = new Map<Peer, PeerAwareness>();

  constructor(
    private readonly limits: AwarenessLimits,
    private readonly onRefused: (peer: Peer, why: AwarenessRefusal) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The update to apply for this frame: `update` itself when every entry is allowed, a re-encoded update of the
   * allowed entries otherwise, undefined when nothing may be applied.
   */
  admit(peer: Peer, update: Uint8Array, entries: readonly AwarenessEntry[]): Uint8Array | undefined {
    const state = this.stateOf(peer);
    if (!this.take(state)) {
      this.onRefused(peer, 'rate');
      return undefined;
    }
    const allowed: Array<{ entry: AwarenessEntry; json: string }> = [];
    for (const entry of entries) {
      const json = JSON.stringify(entry.state) ?? 'null';
      const why = this.check(peer, state, entry, json);
      if (why === undefined) allowed.push({ entry, json });
      else this.onRefused(peer, why);
    }
    if (allowed.length === entries.length) return update;
    if (allowed.length === 0) return undefined;
    const encoder = encoding.createEncoder();
    encoding.writeVarUint(encoder, allowed.length);
    for (const { entry, json } of allowed) {
      encoding.writeVarUint(encoder, entry.clientId);
      encoding.writeVarUint(encoder, entry.clock);
      encoding.writeVarString(encoder, json);
    }
    return encoding.toUint8Array(encoder);
  }

  /** Forgets a closed connection; returns the client ids it owned (their states are removed for everyone). */
  release(peer: Peer): number[] {
    const state = this.peers.get(peer);
    this.peers.delete(peer);
    if (state === undefined) return [];
    for (const id of state.owned) if (this.owners.get(id) === peer) this.owners.delete(id);
    return [...state.owned];
  }

  private check(peer: Peer, state: PeerAwareness, entry: AwarenessEntry, json: string): AwarenessRefusal | undefined {
    const owner = this.owners.get(entry.clientId);
    if (owner !== undefined && owner !== peer) return 'not-owner';
    if (entry.state !== null && utf8Bytes(json) > this.limits.awarenessMaxStateBytes) return 'size';
    if (owner === undefined) {
      if (state.owned.size >= MAX_AWARENESS_CLIENTS_PER_CONNECTION) return 'too-many-clients';
      this.owners.set(entry.clientId, peer);
      state.owned.add(entry.clientId);
    }
    return undefined;
  }

  private stateOf(peer: Peer): PeerAwareness {
    let state = this.peers.get(peer);
    if (state === undefined) {
      state = { owned: new Set(), tokens: this.limits.awarenessUpdatesPerSecond, refilledAt: this.now() };
      this.peers.set(peer, state);
    }
    return state;
  }

  /** Token bucket: `awarenessUpdatesPerSecond` tokens a second, holding at most that many. */
  private take(state: PeerAwareness): boolean {
    const now = this.now();
    const rate = this.limits.awarenessUpdatesPerSecond;
    state.tokens = Math.min(rate, state.tokens + ((now - state.refilledAt) * rate) / 1000);
    state.refilledAt = now;
    if (state.tokens < 1) return false;
    state.tokens -= 1;
    return true;
  }
}
