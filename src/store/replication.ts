// Owns the replication port of the store: the operations a committed write transaction made, recorded for a cluster.
import type { Database, Key } from 'lmdb';
import type { DbName } from './keys.js';

/** One key's write as replicated: a put of `value`, or (`value` absent, length 2) a remove. */
export type KeyOp = readonly [db: DbName, key: Key, value?: unknown];

/**
 * The removal of a run of numbered rows: every key `[...prefix, n]` with `from <= n < to` (a number n). One op where a
 * snapshot fold would otherwise replicate one remove per update it folds (bench/cluster.ts: 1000 per fold, most of a
 * busy message's ops). `except`, never published: keys (as `keyId`) a late message's removal must leave (origin-order.ts).
 */
export type RangeRemoval = readonly [db: DbName, prefix: readonly Key[], from: number, to: number, except?: ReadonlySet<string>];

/** One write as replicated. Length tells them apart: 2 or 3 a key's write, 4 or 5 a range removal. */
export type ReplicatedOp = KeyOp | RangeRemoval;

export function isRange(op: ReplicatedOp): op is RangeRemoval {
  return op.length >= 4;
}

/** Whether `key` is one of the rows `range` removes. */
export function inRange(range: RangeRemoval, key: Key): boolean {
  return isNumbered(key, range[1], range[2], range[3]);
}

function isNumbered(key: Key, prefix: readonly Key[], from: number, to: number): boolean {
  if (!Array.isArray(key) || key.length !== prefix.length + 1) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  const n: unknown = key[prefix.length];
  return typeof n === 'number' && n >= from && n < to;
}

/**
 * The keys `[...prefix, n]`, `from <= n < to`, that `db` holds now: the rows a range removal removes. Collected first,
 * since removing under a live cursor would disturb it; the recording node and every applier remove by this one rule.
 */
export function numberedKeys(db: Database<unknown, Key> | Database<Uint8Array, Key>, prefix: readonly Key[], from: number, to: number): Key[] {
  return [...db.getKeys({ start: [...prefix, from], end: [...prefix, to] })].filter((key) => isNumbered(key, prefix, from, to));
}

/** The wrapped database's range removal (a symbol: no lmdb-js property can clash with it). */
const REMOVE_NUMBERED = Symbol('removeNumbered');

/**
 * Removes the numbered rows `[...prefix, n]`, `from <= n < to`, of `db`; only inside a write transaction. In cluster mode
 * (a database `Recorder.wrap` handed out) it is recorded as one RangeRemoval, not one remove per row.
 */
export function removeNumbered(db: Database<Uint8Array, Key>, prefix: readonly Key[], from: number, to: number): void {
  const recorded = (db as unknown as { [REMOVE_NUMBERED]?: (prefix: readonly Key[], from: number, to: number) => void })[REMOVE_NUMBERED];
  if (recorded !== undefined) return recorded(prefix, from, to);
  for (const key of numberedKeys(db, prefix, from, to)) void db.remove(key);
}

/**
 * The store's port to a cluster (src/cluster/state.ts implements it with a JetStream stream; bootstrap wires it only
 * with NATS_URL). Without it the store records nothing and costs nothing.
 */
export interface Replication {
  /**
   * Told synchronously right after a local commit, in commit order, with every write the committed transaction (or
   * group-commit batch) made. Resolves once they are durable in the cluster (the publish acknowledgement); rejects
   * (UNAVAILABLE) when they could not be made so in time — the caller then answers not-acknowledged.
   */
  publish(ops: readonly ReplicatedOp[]): Promise<void>;
  /**
   * Why no write should start now (the cluster log is unreachable and earlier writes wait to be resent), as the
   * error to answer with; undefined when writes may go ahead. Asked before a transaction runs, so a refused write
   * changes nothing, not even this node's cache.
   */
  refusal?(): Error | undefined;
}

/** What other nodes' writes changed, for in-memory caches that read these databases. */
export type ChangeListener = (changed: ReadonlySet<DbName>) => void;

/**
 * DB.meta key of a cluster node's cache marker (src/cluster/state.ts): `{stream, dirty}`. Opening such a cache
 * without cluster mode marks it dirty, since writes made then never reach the stream (the next cluster start rebuilds it).
 */
export const CLUSTER_CACHE_KEY = 'clusterCache';

/** Databases never replicated: node-local bookkeeping (schema stamp, dev banner flag, replication position). */
export const LOCAL_ONLY: ReadonlySet<DbName> = new Set<DbName>(['meta']);

/**
 * Collects the writes of the write transactions open now: one frame per transaction, nested like them. A frame whose
 * transaction threw is dropped; a frame that succeeded is folded into its parent, or handed back at the outermost.
 */
export class Recorder {
  private readonly frames: ReplicatedOp[][] = [];

  /** Called for a write made outside any Store transaction (none should be): it is published on its own. */
  constructor(private readonly loose: (op: ReplicatedOp) => void) {}

  /** Runs `body` as one frame; returns its result and the ops it made (empty when nested: the parent has them). */
  run<T>(body: () => T): { result: T; ops: ReplicatedOp[] } {
    const frame: ReplicatedOp[] = [];
    this.frames.push(frame);
    let result: T;
    try {
      result = body();
    } finally {
      this.frames.pop();
    }
    const parent = this.frames.at(-1);
    if (parent === undefined) return { result, ops: frame };
    for (const op of frame) parent.push(op);
    return { result, ops: [] };
  }

  record(op: ReplicatedOp): void {
    const frame = this.frames.at(-1);
    if (frame === undefined) this.loose(op);
    else frame.push(op);
  }

  /**
   * The database as handed out in cluster mode: reads pass through, every write is recorded in the open frame. The
   * calls that would bypass recording (clearing or dropping a whole database) refuse: the applier could not replay them.
   */
  wrap<V>(name: DbName, db: Database<V, Key>): Database<V, Key> {
    const recorder = this;
    /** Functions handed out, made once per property (reads are hot: no new closure per call). */
    const made = new Map<PropertyKey, unknown>();
    const handOut = (property: PropertyKey, make: () => unknown): unknown => {
      let fn = made.get(property);
      if (fn === undefined) made.set(property, (fn = make()));
      return fn;
    };
    return new Proxy(db, {
      get(target, property, receiver) {
        switch (property) {
          case REMOVE_NUMBERED:
            return handOut(property, () => (prefix: readonly Key[], from: number, to: number) => {
              recorder.record([name, prefix, from, to]);
              for (const key of numberedKeys(target, prefix, from, to)) void target.remove(key);
            });
          case 'put':
          case 'putSync':
            return handOut(property, () => (key: Key, value: V, ...rest: unknown[]) => {
              recorder.record([name, key, value]);
              return (target[property] as (...args: unknown[]) => unknown).call(target, key, value, ...rest);
            });
          case 'remove':
          case 'removeSync':
            return handOut(property, () => (key: Key, ...rest: unknown[]) => {
              recorder.record([name, key]);
              return (target[property] as (...args: unknown[]) => unknown).call(target, key, ...rest);
            });
          case 'clearSync':
          case 'clearAsync':
          case 'drop':
          case 'dropSync':
          case 'ifNoExists':
          case 'ifVersion':
            return () => {
              throw new Error(`${String(property)} on ${name} is not replicated: write keys one by one in cluster mode`);
            };
          default: {
            const value: unknown = Reflect.get(target, property, receiver);
            return typeof value === 'function' ? handOut(property, () => (value as (...args: unknown[]) => unknown).bind(target)) : value;
          }
        }
      },
    });
  }
}

/**
 * Hands committed transactions to the port in commit order. A transaction takes its place (`reserve`) while it runs
 * inside LMDB's single writer, so places follow commit order; it is published once it and every earlier place are
 * told (`complete`), whatever order the commit promises resolve in. A place whose commit failed publishes nothing.
 */
export class Outgoing {
  private nextPlace = 0;
  private released = 0;
  private readonly done = new Map<number, { ops: readonly ReplicatedOp[]; resolve: () => void; reject: (error: unknown) => void } | null>();

  constructor(private readonly port: Replication) {}

  reserve(): number {
    return this.nextPlace++;
  }

  /** `ops` null: the commit failed. Resolves once the ops are acknowledged by the cluster (at once for none). */
  complete(place: number, ops: readonly ReplicatedOp[] | null): Promise<void> {
    let published: Promise<void> = Promise.resolve();
    if (ops === null || ops.length === 0) this.done.set(place, null);
    else {
      published = new Promise<void>((resolve, reject) => this.done.set(place, { ops, resolve, reject }));
    }
    while (this.done.has(this.released)) {
      const entry = this.done.get(this.released);
      this.done.delete(this.released);
      this.released++;
      if (entry !== null && entry !== undefined) this.port.publish(entry.ops).then(entry.resolve, entry.reject);
    }
    return published;
  }
}

/**
 * Keys this node wrote whose message the stream's applier has not reached yet. Their messages land later in the
 * stream than any foreign message the applier handles now, so such a foreign write to one of these keys is already
 * overwritten in stream order: skipping it keeps this node's cache equal to the stream's order (a node that simply
 * skipped its own messages would keep the foreign value instead).
 */
export class PendingKeys {
  private readonly counts = new Map<string, number>();
  /** This node's range removals not reached yet (few: one per snapshot fold in flight), each with its count. */
  private readonly ranges: Array<{ readonly range: RangeRemoval; count: number }> = [];

  add(ops: readonly ReplicatedOp[], delta: 1 | -1): void {
    for (const op of ops) {
      if (isRange(op)) {
        this.addRange(op, delta);
        continue;
      }
      const id = keyId(op);
      const count = (this.counts.get(id) ?? 0) + delta;
      if (count <= 0) this.counts.delete(id);
      else this.counts.set(id, count);
    }
  }

  /** Whether a foreign write of this key loses to one of this node's writes still to come in the stream. */
  holds(op: KeyOp): boolean {
    if (this.counts.has(keyId(op))) return true;
    for (const { range } of this.ranges) if (range[0] === op[0] && inRange(range, op[1])) return true;
    return false;
  }

  private addRange(range: RangeRemoval, delta: 1 | -1): void {
    const index = this.ranges.findIndex((entry) => sameRange(entry.range, range));
    if (index < 0) {
      if (delta > 0) this.ranges.push({ range, count: 1 });
      return;
    }
    const entry = this.ranges[index] as { range: RangeRemoval; count: number };
    entry.count += delta;
    if (entry.count <= 0) this.ranges.splice(index, 1);
  }
}

function sameRange(a: RangeRemoval, b: RangeRemoval): boolean {
  return a[0] === b[0] && a[2] === b[2] && a[3] === b[3] && a[1].length === b[1].length && a[1].every((part, i) => part === b[1][i]);
}

/** One string per database and key, for maps of keys. */
export function keyId(op: KeyOp): string {
  return `${op[0]}\u0000${JSON.stringify(op[1])}`;
}
