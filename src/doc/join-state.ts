// Owns the late-join answer: a store's whole state as a ready SyncStep2 frame, kept while the store is unchanged, within one byte budget.
import * as Y from 'yjs';
import { writeSyncStep2 } from '../sync/protocol.js';

/**
 * Below this size a frame is cheaper to encode again than to keep: a small document's state encodes in
 * microseconds, and a budget spent on thousands of small documents would only churn.
 */
export const JOIN_FRAME_MIN_BYTES = 64 * 1024;
/** Changes kept after a join frame before it is encoded again: a joiner then gets the frame and these as Update frames. */
export const JOIN_TAIL_MAX_UPDATES = 64;

/**
 * Whether a kept answer may grow to `frames` frames whose tail (the Update frames after the state) is `tailBytes`:
 * a joiner applies the tail one update at a time, so it stays short and small beside the state it follows.
 */
export function keepsTail(stateBytes: number, frames: number, tailBytes: number): boolean {
  return frames <= JOIN_TAIL_MAX_UPDATES && tailBytes <= stateBytes / 4;
}

/** A store whose join frame the budget may drop (EditorDoc). */
export interface JoinFrameHolder {
  /** Forgets the frame; the budget has already taken its bytes off. */
  evictJoinFrame(): void;
}

/**
 * The frames kept over all documents, least recently used (or changed) first. Joining a 1 MB document otherwise
 * costs one Y.encodeStateAsUpdate (~20 ms of CPU, bench/join.ts) per joiner; with a kept answer it costs the sends.
 * A store's later changes are added to its answer as Update frames (so the answer is never stale: state + tail is
 * the current state) until the tail is too long; the answer is dropped then, when its doc is destroyed (unload), and
 * here when the budget is full, so the memory held is bounded by JOIN_STATE_CACHE_BYTES.
 */
export class JoinFrames {
  /** Map order is use order: the first entry is the least recently used. */
  private readonly held = new Map<JoinFrameHolder, number>();
  private total = 0;

  constructor(readonly budgetBytes: number) {}

  /** Bytes held now (metrics, tests). */
  get bytes(): number {
    return this.total;
  }

  get count(): number {
    return this.held.size;
  }

  /** Whether a frame of `size` bytes may be kept at all. */
  admits(size: number): boolean {
    return size >= JOIN_FRAME_MIN_BYTES && size <= this.budgetBytes;
  }

  /** Records `holder`'s new frame, dropping the least recently used others until it fits. */
  add(holder: JoinFrameHolder, size: number): void {
    this.remove(holder);
    for (const [other, otherSize] of this.held) {
      if (this.total + size <= this.budgetBytes) break;
      this.held.delete(other);
      this.total -= otherSize;
      other.evictJoinFrame();
    }
    this.held.set(holder, size);
    this.total += size;
  }

  /** `holder`'s frame was used: it becomes the most recently used. */
  touch(holder: JoinFrameHolder): void {
    const size = this.held.get(holder);
    if (size === undefined) return;
    this.held.delete(holder);
    this.held.set(holder, size);
  }

  /** `holder` dropped its frame (changed, destroyed). */
  remove(holder: JoinFrameHolder): void {
    const size = this.held.get(holder);
    if (size === undefined) return;
    this.held.delete(holder);
    this.total -= size;
  }
}

/** The budget of a server that keeps no frames (JOIN_STATE_CACHE_BYTES=0, and stores made outside a registry). */
export const NO_JOIN_FRAMES = new JoinFrames(0);

/**
 * True when `stateVector` (already validated) holds none of `doc`'s clients past clock 0: the answer to it is then
 * the doc's whole state, the same bytes for every such joiner (a new client, or one that only has edits of its own).
 */
export function coversNothing(doc: Y.Doc, stateVector: Uint8Array): boolean {
  // The empty state vector (one varuint 0) is by far the most common: a fresh client.
  if (stateVector.length === 1 && stateVector[0] === 0) return true;
  const theirs = Y.decodeStateVector(stateVector);
  for (const client of doc.store.clients.keys()) if ((theirs.get(client) ?? 0) > 0) return false;
  return true;
}

/** The SyncStep2 frame answering `stateVector`, encoded now. */
export function encodeSyncStep2(doc: Y.Doc, stateVector?: Uint8Array): Uint8Array {
  return writeSyncStep2(Y.encodeStateAsUpdate(doc, stateVector));
}
