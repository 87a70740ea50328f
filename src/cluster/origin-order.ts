// Owns the order of one origin's messages as the applier sees them: duplicates dropped, a late message kept from undoing later ones.
import type { Key } from 'lmdb';
import type { DbName } from '../store/keys.js';
import { inRange, isRange, keyId, type RangeRemoval, type ReplicatedOp } from '../store/replication.js';

/** DB.meta key (node-local) of the open gaps (`OriginOrder.changes`), stored with the applier's position and carried by checkpoints. */
export const GAPS_KEY = 'clusterGaps';

/** A gap wider than this is taken as a fresh start of the count (a rebuild that began mid-stream), not as missing messages. */
const MAX_GAP = 10_000;

interface OriginState {
  /** Highest counter seen. */
  max: number;
  /** Counters below `max` not seen yet: sent, not acknowledged, and resent later (or never). */
  readonly missing: Set<number>;
  /** While some are missing: each key written since, with the highest counter that wrote it. */
  readonly later: Map<string, number>;
  /** While some are missing: each range removal since, with the counter that made it. */
  readonly laterRanges: Array<[RangeRemoval, number]>;
}

/**
 * A node publishes its messages in commit order, but when its connection drops, a message written to the dying
 * socket is lost while the next ones, buffered by the client, land after the reconnect; the lost one is resent and
 * lands late. Applied as it comes, it would undo the later ones' writes on every other node (its origin keeps the
 * later values). So a late message's writes to keys a later message of the same origin wrote are skipped, and a
 * second copy (a resend past the stream's duplicate window) is dropped. State is kept per origin only while a gap is
 * open; a gap left open by a node that died stays (its keys only, until this process restarts).
 */
export class OriginOrder {
  private readonly origins = new Map<string, OriginState>();
  /** Whether an open gap changed (opened, grew, closed) since `changes()` was last asked. */
  private changed = false;

  /** The ops of message `n` of `origin` to apply (all, some, or undefined for a copy already applied). */
  admit(origin: string, n: number, ops: readonly ReplicatedOp[]): readonly ReplicatedOp[] | undefined {
    const state = this.origins.get(origin);
    if (state === undefined || n > state.max + MAX_GAP) {
      if (state !== undefined && state.missing.size > 0) this.changed = true;
      this.origins.set(origin, { max: n, missing: new Set(), later: new Map(), laterRanges: [] });
      return ops;
    }
    if (state.missing.size > 0 || n > state.max + 1) this.changed = true;
    if (n > state.max) {
      for (let missing = state.max + 1; missing < n; missing++) state.missing.add(missing);
      state.max = n;
      if (state.missing.size > 0) for (const op of ops) remember(state, op, n);
      return ops;
    }
    if (!state.missing.delete(n)) return undefined;
    const kept = lateOps(state, ops, n);
    if (state.missing.size === 0) {
      state.later.clear();
      state.laterRanges.length = 0;
    }
    return kept;
  }

  /** Whether message `n` of `origin` was applied already (a second copy, which `admit` would drop): asks without changing anything. */
  applied(origin: string, n: number): boolean {
    const state = this.origins.get(origin);
    return state !== undefined && n <= state.max && !state.missing.has(n);
  }

  /**
   * The open gaps as a plain value, to store with the applier's position (so a restart in the middle of a gap still
   * keeps a late message from undoing later writes); undefined when no gap changed since the last call. Origins
   * without a gap are not kept: after a restart their next message starts their count again, as before.
   */
  changes(): StoredGaps | undefined {
    if (!this.changed) return undefined;
    this.changed = false;
    const gaps: StoredGaps = [];
    for (const [origin, state] of this.origins) {
      if (state.missing.size === 0) continue;
      gaps.push([origin, state.max, [...state.missing], [...state.later], state.laterRanges.map(([[db, prefix, from, to], n]) => [db, prefix, from, to, n])]);
    }
    return gaps;
  }

  /** Takes back the gaps `changes()` gave (at start, before the applier resumes). */
  restore(gaps: unknown): void {
    if (!Array.isArray(gaps)) return;
    for (const gap of gaps as unknown[]) {
      // Four elements: stored before range removals were replicated (no ranges).
      if (!Array.isArray(gap) || (gap.length !== 4 && gap.length !== 5)) continue;
      const [origin, max, missing, later, ranges] = gap as [unknown, unknown, unknown, unknown, unknown];
      if (typeof origin !== 'string' || typeof max !== 'number' || !Array.isArray(missing) || !Array.isArray(later)) continue;
      this.origins.set(origin, {
        max,
        missing: new Set(missing.filter((n): n is number => typeof n === 'number')),
        later: new Map(later.filter((entry): entry is [string, number] => Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number')),
        laterRanges: (Array.isArray(ranges) ? (ranges as unknown[]) : []).filter(isStoredRange).map(([db, prefix, from, to, n]) => [[db, prefix, from, to], n]),
      });
    }
  }
}

/** Open gaps as stored in DB.meta: [origin, highest counter seen, counters missing, [key, counter that wrote it last], range removals since]. */
export type StoredGaps = Array<[origin: string, max: number, missing: number[], later: Array<[string, number]>, ranges: StoredRange[]]>;

type StoredRange = [db: DbName, prefix: readonly Key[], from: number, to: number, n: number];

function isStoredRange(value: unknown): value is StoredRange {
  if (!Array.isArray(value) || value.length !== 5) return false;
  const [db, prefix, from, to, n] = value as unknown[];
  return typeof db === 'string' && Array.isArray(prefix) && prefix.every((part) => typeof part === 'string' || typeof part === 'number') && typeof from === 'number' && typeof to === 'number' && typeof n === 'number';
}

/** Notes what message `n`, a later one while a gap is open, wrote. */
function remember(state: OriginState, op: ReplicatedOp, n: number): void {
  if (isRange(op)) state.laterRanges.push([[op[0], op[1], op[2], op[3]], n]);
  else state.later.set(keyId(op), n);
}

/**
 * The ops of late message `n` that later messages did not overwrite: a key's write is dropped when a later message wrote
 * the key or removed a range holding it; a range removal leaves the keys later messages wrote (its `except`).
 */
function lateOps(state: OriginState, ops: readonly ReplicatedOp[], n: number): ReplicatedOp[] {
  const kept: ReplicatedOp[] = [];
  for (const op of ops) {
    if (!isRange(op)) {
      const overwritten = (state.later.get(keyId(op)) ?? 0) > n || state.laterRanges.some(([range, by]) => by > n && range[0] === op[0] && inRange(range, op[1]));
      if (!overwritten) kept.push(op);
      continue;
    }
    const except = new Set<string>();
    for (const [id, by] of state.later) if (by > n) except.add(id);
    kept.push(except.size === 0 ? op : [op[0], op[1], op[2], op[3], except]);
  }
  return kept;
}
