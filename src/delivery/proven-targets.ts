// Owns which delivery targets have had a successful attempt (proven): a bounded cache in memory over a table in LMDB.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { ownCopy } from '../store/own-copy.js';

/** Proven targets kept in memory, least recently used forgotten first (a string and a number each, ~85 B: `ownCopy`). */
export const PROVEN_KEPT = 50_000;
/** A target with no successful attempt for this long must prove itself again (its stored row is pruned). */
export const KEEP_PROVEN_MS = 30 * 24 * 60 * 60 * 1000;
/** A proven target's stored time is rewritten at most this often (so pruning sees it in use): a write a day per target. */
const REFRESH_MS = 24 * 60 * 60 * 1000;
/** Rows a pruning slice reads (outside a transaction) before removing the expired ones among them in one. */
const PRUNE_SLICE = 1000;

/**
 * A target that never had a successful attempt (a new endpoint, or one that never answers) is unproven: the runner
 * gives it one attempt in flight in slots of their own (src/delivery/runner.ts). The first success proves it, and is
 * written in that attempt's settlement, so a restart or a move of the worker role to another node does not send
 * every established workspace's targets back among the unproven, where fresh endpoints that never answer would hold
 * them for their timeouts (bench/README.md, "Twentieth session"). Without a store (tests of the runner alone) it is
 * memory only. Memory holds at most PROVEN_KEPT; one forgotten there is read back from its row when next asked.
 */
export class ProvenTargets {
  /** target -> when its stored row was written, oldest use first. */
  private readonly recent = new Map<string, number>();
  private readonly rows: Database<number, Key> | undefined;

  constructor(private readonly store?: Store) {
    this.rows = store?.records<number>(DB.deliveryProven);
  }

  /** Whether `target` has had a successful attempt (an LMDB read when memory does not know it). */
  has(target: string): boolean {
    const at = this.recent.get(target);
    if (at !== undefined) return true;
    const stored = this.rows?.get(target);
    if (stored === undefined) return false;
    this.remember(target, stored);
    return true;
  }

  /** Inside the settlement's transaction of a successful attempt: remembers the target, writing its row when new or stale. */
  record(_tx: WriteTx, target: string, now: number): void {
    const at = this.recent.get(target) ?? this.rows?.get(target);
    if (at !== undefined && now - at < REFRESH_MS) {
      this.remember(target, at);
      return;
    }
    this.rows?.putSync(target, now);
    this.remember(target, now);
  }

  /**
   * Inside the transaction that deletes what the target delivered to (an advanced webhook endpoint): its proof goes
   * with it, in memory and stored. Endpoint ids are never reused, so it would never be asked for again, yet each
   * create, deliver, delete cycle left one row for 30 days and one entry in memory until 50,000 newer ones pushed it
   * out (bench/README.md, "Twentieth session: endpoint churn memory"). Another node's memory may keep it until then:
   * nothing asks for it there either.
   */
  forget(_tx: WriteTx, target: string): void {
    this.recent.delete(target);
    this.rows?.removeSync(target);
  }

  /** How many memory holds (for tests and the bench). */
  get size(): number {
    return this.recent.size;
  }

  /**
   * Removes stored rows of targets with no success since `before`, PRUNE_SLICE rows read at a time and the expired
   * ones among them removed in one transaction; `stopped` ends the pass between slices. Returns how many went.
   */
  async prune(before: number, stopped: () => boolean): Promise<number> {
    const store = this.store;
    const rows = this.rows;
    if (store === undefined || rows === undefined) return 0;
    let removed = 0;
    let start: Key | undefined;
    for (;;) {
      const slice = [...rows.getRange({ ...(start === undefined ? {} : { start }), limit: PRUNE_SLICE + (start === undefined ? 0 : 1) })].filter(({ key }) => start === undefined || key !== start);
      const expired = slice.filter(({ value }) => value < before).map(({ key }) => key as string);
      if (expired.length > 0) {
        await store.transaction(() => {
          // Re-read: a success since the slice was read keeps its row.
          for (const key of expired) if ((rows.get(key) ?? Infinity) < before) rows.removeSync(key);
        });
        for (const key of expired) if (rows.get(key) === undefined) this.recent.delete(key);
        removed += expired.length;
      }
      if (slice.length < PRUNE_SLICE || stopped()) return removed;
      start = slice[slice.length - 1]?.key;
    }
  }

  private remember(target: string, at: number): void {
    this.recent.delete(target);
    this.recent.set(ownCopy(target), at);
    if (this.recent.size > PROVEN_KEPT) this.recent.delete(this.recent.keys().next().value as string);
  }
}
