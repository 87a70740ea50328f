// Owns one document's awareness: the server-side y-protocols Awareness, which connection owns which client id, and the frames its changes make.
import * as awarenessProtocol from 'y-protocols/awareness';
import { ByteBudget } from '../byte-budget.js';
import type { Config } from '../config.js';
import { writeAwareness, type AwarenessEntry } from '../sync/protocol.js';
import { AwarenessGuard, type AwarenessLimits, type AwarenessRefusal } from './awareness-guard.js';
import { createAwareness, releaseAwareness } from './awareness-sweep.js';
import type { Peer } from './peer.js';

/** API keys whose awareness budget is remembered at once; past it the least recently charged (a rested one, mostly) is forgotten. */
const AWARENESS_BUDGET_KEYS = 10_000;

/**
 * The process's API_KEY_AWARENESS_BYTES_PER_SECOND budget, shared by every document's actor: an awareness frame costs
 * its bytes times the connections it reaches. One largest state to every connection of a document passes on a rested
 * key.
 */
export function awarenessFanoutBudget(config: Pick<Config, 'apiKeyAwarenessBytesPerSecond' | 'awarenessMaxStateBytes' | 'maxConnectionsPerDocument'>): ByteBudget {
  return new ByteBudget({
    bytesPerSecond: config.apiKeyAwarenessBytesPerSecond,
    largestCharge: config.awarenessMaxStateBytes * config.maxConnectionsPerDocument,
    maxKeys: AWARENESS_BUDGET_KEYS,
  });
}

/** What the document's awareness needs of its actor. */
export interface AwarenessOwner {
  /** A change's frame, for every connection of the document, the sender too (src/doc/actor.ts publishes it). */
  awarenessChanged(frame: Uint8Array): void;
  /** An entry a connection sent was dropped (debug log). */
  awarenessRefused(peer: Peer, why: AwarenessRefusal): void;
  /** Whether a frame of `bytes` for every connection of the document fits the API key's awareness budget (taken if so). */
  awarenessFanoutFits(bytes: number): boolean;
  /** Expiring states failed (they expire from a timer, where a throw would end the process). */
  taskFailed(error: unknown): void;
}

/** `origin` of the removals made when a connection leaves. */
const DISCONNECTED = 'disconnect';

/**
 * Made when a client first speaks awareness (most loaded documents never do). Runs inside the actor's mailbox, as
 * everything else of the document does; its own y-protocols Awareness is made on the first frame.
 */
export class DocumentAwareness {
  private awareness: awarenessProtocol.Awareness | undefined;
  private guard: AwarenessGuard | undefined;

  constructor(private readonly limits: AwarenessLimits, private readonly owner: AwarenessOwner) {}

  private now(): awarenessProtocol.Awareness {
    if (this.awareness !== undefined) return this.awareness;
    const awareness = createAwareness((error) => this.owner.taskFailed(error));
    awareness.on('update', (change: { added: number[]; updated: number[]; removed: number[] }) => this.changed(change));
    this.awareness = awareness;
    return awareness;
  }

  /** Every state known, as one frame for a joining connection; undefined when there are none. */
  statesFrame(): Uint8Array | undefined {
    const awareness = this.awareness;
    if (awareness === undefined || awareness.getStates().size === 0) return undefined;
    return writeAwareness(awarenessProtocol.encodeAwarenessUpdate(awareness, [...awareness.getStates().keys()]));
  }

  /** Applies a connection's awareness update, keeping only the entries it may set (src/doc/awareness-guard.ts). */
  receive(peer: Peer, update: Uint8Array, entries: readonly AwarenessEntry[]): void {
    const awareness = this.now();
    const admitted = (this.guard ??= new AwarenessGuard(this.limits, (from, why) => this.owner.awarenessRefused(from, why))).admit(peer, update, entries);
    if (admitted === undefined) return;
    // What the frame will cost: its bytes copied to every connection of the document (API_KEY_AWARENESS_BYTES_PER_SECOND).
    if (!this.owner.awarenessFanoutFits(admitted.length)) {
      this.owner.awarenessRefused(peer, 'fan-out');
      return;
    }
    awarenessProtocol.applyAwarenessUpdate(awareness, admitted, peer);
  }

  /** The answer to a query-awareness frame: every state, possibly none. */
  query(): Uint8Array {
    const awareness = this.now();
    return writeAwareness(awarenessProtocol.encodeAwarenessUpdate(awareness, [...awareness.getStates().keys()]));
  }

  /** A connection left: the states it announced are removed (and the removal published). */
  release(peer: Peer): void {
    const owned = this.guard?.release(peer) ?? [];
    const awareness = this.awareness;
    const live = awareness === undefined ? [] : owned.filter((id) => awareness.states.has(id));
    if (awareness !== undefined && live.length > 0) awarenessProtocol.removeAwarenessStates(awareness, live, DISCONNECTED);
  }

  dispose(): void {
    if (this.awareness !== undefined) releaseAwareness(this.awareness);
    this.awareness = undefined;
  }

  private changed(change: { added: number[]; updated: number[]; removed: number[] }): void {
    if (this.awareness === undefined) return;
    const changed = [...change.added, ...change.updated, ...change.removed];
    this.owner.awarenessChanged(writeAwareness(awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed)));
  }
}
