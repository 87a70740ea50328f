// Owns the pending delivery jobs' due index by target (DB.deliveryTargetDue) and each target's earliest due time (DB.deliveryHeads).
import type { Database, Key } from 'lmdb';
import type { Store } from '../store/env.js';
import { DB, KEY_END } from '../store/keys.js';
import { rowCount } from '../store/row-count.js';
import { ScopedMemo } from '../scoped-memo.js';

/** What the index keeps of a pending job. Every job of a target belongs to one API key (a target names its key or its endpoint). */
export interface DueEntry {
  readonly id: string;
  readonly target: string;
  readonly apiKey: string;
  readonly due: number;
}

/** The runner's concurrency limits, asked per target (and its API key). */
export interface Slots {
  /** Whether one more job of `target` may start now. */
  free(target: string, apiKey: string): boolean;
  /** The same question, counting the job as started when the answer is yes (a scan picking several jobs). */
  take(target: string, apiKey: string): boolean;
}

/**
 * A time index of one row per pending job, [due, id], made every scan walk the jobs a full target held back: a target
 * whose attempts hang (an endpoint that never answers) and whose backlog grows kept the event loop of the process
 * that runs deliveries busy for everyone (bench/README.md, "Eighteenth session"). Here a target's jobs are a range
 * of their own, [target, due, id], and the targets are walked through their earliest due time, [due, target] ->
 * apiKey: a scan reads one row per target with work due, and only the jobs it can start.
 */
export class DueIndex {
  private readonly byTarget: Database<null, Key>;
  private readonly heads: Database<string, Key>;
  /**
   * While `batched` runs (one write transaction): each target's head as this index last read or wrote it (null: none).
   * Finding a head is a cursor over the target's range, ~8 µs in lmdb-js, and planning asked it for every job, where
   * one transaction plans several events to the same endpoints (bench/README.md, "Twentieth session").
   */
  private readonly memo = new ScopedMemo<string, number | null>();

  constructor(store: Store) {
    this.byTarget = store.records<null>(DB.deliveryTargetDue);
    this.heads = store.records<string>(DB.deliveryHeads);
  }

  /**
   * Runs `body`, synchronous and inside one write transaction, with each target's head read once: nothing else writes
   * the index while it runs (LMDB has one writer and `body` does not yield), and `add` and `remove` keep what they
   * read up to date. Nested calls share the outer one's.
   */
  batched<T>(body: () => T): T {
    return this.memo.run(body);
  }

  /** Inside a write transaction: indexes a pending job, and makes it its target's head when it is due first. */
  add(entry: DueEntry): void {
    const head = this.headOf(entry.target);
    this.byTarget.putSync([entry.target, entry.due, entry.id], null);
    if (head !== undefined && head <= entry.due) return;
    if (head !== undefined) this.heads.removeSync([head, entry.target]);
    this.heads.putSync([entry.due, entry.target], entry.apiKey);
    this.memo.current?.set(entry.target, entry.due);
  }

  /** Inside a write transaction: drops a job that is no longer pending, and moves its target's head when it was it. */
  remove(entry: DueEntry): void {
    const head = this.headOf(entry.target);
    this.byTarget.removeSync([entry.target, entry.due, entry.id]);
    const next = this.storedHeadOf(entry.target);
    this.memo.current?.set(entry.target, next ?? null);
    if (next === head) return;
    if (head !== undefined) this.heads.removeSync([head, entry.target]);
    if (next !== undefined) this.heads.putSync([next, entry.target], entry.apiKey);
  }

  /**
   * Ids of jobs due at or before `now` that `slots` lets start, at most `limit`, targets in the order of their
   * earliest due job and each target's jobs in due order; `busy` ids (attempts in flight) are skipped. A target
   * without a free slot costs one read.
   */
  due(now: number, limit: number, busy: ReadonlySet<string>, slots: Slots): string[] {
    const found: string[] = [];
    for (const { key, value: apiKey } of this.heads.getRange({ start: [0], end: [now, KEY_END] })) {
      if (found.length >= limit) break;
      const target = (key as [number, string])[1];
      if (!slots.free(target, apiKey)) continue;
      for (const jobKey of this.byTarget.getKeys({ start: [target], end: [target, now, KEY_END] })) {
        const id = (jobKey as [string, number, string])[2];
        if (busy.has(id)) continue;
        if (found.length >= limit || !slots.take(target, apiKey)) break;
        found.push(id);
      }
    }
    return found;
  }

  /** The id of `target`'s earliest job due at or before `now` that is not `busy`. */
  first(target: string, now: number, busy: ReadonlySet<string>): string | undefined {
    for (const jobKey of this.byTarget.getKeys({ start: [target], end: [target, now, KEY_END] })) {
      const id = (jobKey as [string, number, string])[2];
      if (!busy.has(id)) return id;
    }
    return undefined;
  }

  /**
   * The earliest due time of a job that could start once due: not `busy`, of a target `slots` has room for. Jobs
   * held back by a full target are left out, so the runner does not wake for them; an attempt that ends wakes it.
   */
  next(busy: ReadonlySet<string>, slots: Pick<Slots, 'free'>): number | undefined {
    let best: number | undefined;
    for (const { key, value: apiKey } of this.heads.getRange({ start: [0] })) {
      const [head, target] = key as [number, string];
      // A target's jobs are due no earlier than its head: past the best found, no later target can beat it.
      if (best !== undefined && head >= best) break;
      if (!slots.free(target, apiKey)) continue;
      for (const jobKey of this.byTarget.getKeys({ start: [target], end: [target, KEY_END] })) {
        const [, due, id] = jobKey as [string, number, string];
        if (busy.has(id)) continue;
        if (best === undefined || due < best) best = due;
        break;
      }
    }
    return best;
  }

  /** Every pending job's id, target by target; with `apiKeys`, only those keys' jobs (a row per target is read to find them). */
  *ids(apiKeys?: ReadonlySet<string>): Generator<string> {
    if (apiKeys === undefined) {
      for (const key of this.byTarget.getKeys({})) yield (key as [string, number, string])[2];
      return;
    }
    const targets = new Set<string>();
    for (const { key, value: apiKey } of this.heads.getRange({})) if (apiKeys.has(apiKey)) targets.add((key as [number, string])[1]);
    for (const target of targets) {
      for (const key of this.byTarget.getKeys({ start: [target], end: [target, KEY_END] })) yield (key as [string, number, string])[2];
    }
  }

  /**
   * Pending jobs (one index row each), the targets they wait on (one head each) and the earliest due time among them
   * (undefined: none), in flight or held back included: two row counts and one read, for /metrics.
   */
  size(): { readonly jobs: number; readonly targets: number; readonly earliestDue: number | undefined } {
    let earliestDue: number | undefined;
    for (const key of this.heads.getKeys({ start: [0], limit: 1 })) earliestDue = (key as [number, string])[0];
    return { jobs: rowCount(this.byTarget), targets: rowCount(this.heads), earliestDue };
  }

  private headOf(target: string): number | undefined {
    const memo = this.memo.current;
    if (memo === undefined) return this.storedHeadOf(target);
    const known = memo.get(target);
    if (known !== undefined) return known ?? undefined;
    const head = this.storedHeadOf(target);
    memo.set(target, head ?? null);
    return head;
  }

  private storedHeadOf(target: string): number | undefined {
    for (const key of this.byTarget.getKeys({ start: [target], end: [target, KEY_END], limit: 1 })) return (key as [string, number, string])[1];
    return undefined;
  }
}
