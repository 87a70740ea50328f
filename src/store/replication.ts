// Owns the replication port of the store: the operations a committed write transaction made, recorded for a cluster.
import type { Database, Key } from 'lmdb';
import type { DbName } from './keys.js';

/** One write as replicated: a put of `value`, or (`value` absent, length 2) a remove. */
export type ReplicatedOp = readonly [db: DbName, key: Key, value?: unknown];

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

  add(ops: readonly ReplicatedOp[], delta: 1 | -1): void {
    for (const op of ops) {
      const id = keyId(op);
      const count = (this.counts.get(id) ?? 0) + delta;
      if (count <= 0) this.counts.delete(id);
      else this.counts.set(id, count);
    }
  }

  holds(op: ReplicatedOp): boolean {
    return this.counts.has(keyId(op));
  }
}

/** One string per database and key, for maps of keys. */
export function keyId(op: ReplicatedOp): string {
  return `${op[0]}\u0000${JSON.stringify(op[1])}`;
}
