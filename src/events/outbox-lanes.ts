// Owns DB.outboxLanes: an API key's events parked in its own lane, in seq order, when planning them outran the key's share of a dispatcher round.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { rowCount } from '../store/row-count.js';
import { eventOf, type StoredEvent } from './outbox-row.js';
import type { OutboxEvent } from './types.js';

/**
 * Above every seq (seqs are counters from 1): `[apiKey, AFTER_EVERY_SEQ]` sorts after each row of that key's lane and
 * before the first row of the next key's, so one seek reaches the next lane without reading this one's rows.
 */
const AFTER_EVERY_SEQ = 2 ** 53;

type LaneRef = Pick<OutboxEvent, 'apiKey' | 'seq' | 'node'>;

/** Every row of one key's lane. */
function laneRange(apiKey: string): { readonly start: Key; readonly end: Key } {
  return { start: [apiKey], end: [apiKey, AFTER_EVERY_SEQ] };
}

function laneKey(ref: LaneRef): Key {
  return ref.node === undefined ? [ref.apiKey, ref.seq] : [ref.apiKey, ref.seq, ref.node];
}

/**
 * The outbox is one queue in commit order, and an event's planning costs a job per endpoint of its key: a workspace
 * with 100 endpoints writing 1,000 comments put 100,000 jobs ahead of every other workspace's next event (17 s on this
 * machine, bench/README.md "Nineteenth session"). The dispatcher therefore parks the events of a key past its share of
 * a round here, which costs one row, and plans the lanes in turn. Only the dispatcher (the worker role) parks and
 * takes; a deletion on any node removes.
 */
export class OutboxLanes {
  private readonly db: Database<StoredEvent, Key>;
  /**
   * The API keys whose lane may hold events, in turn order (a Set keeps insertion order; the next turn is the first).
   * Undefined until read from the database, and again after `reload`.
   */
  private turns: Set<string> | undefined;

  constructor(store: Store) {
    this.db = store.records<StoredEvent>(DB.outboxLanes);
  }

  /** Reads the lanes' keys from the database at the next use: a dispatcher taking over from another node's. */
  reload(): void {
    this.turns = undefined;
  }

  /** Whether the key has a lane: its new events join it, behind the parked ones, so its events are planned in order. */
  has(apiKey: string): boolean {
    return this.keys().has(apiKey);
  }

  /** How many events are parked, over every lane (LMDB's row count: no scan). */
  get events(): number {
    return rowCount(this.db);
  }

  /** How many keys have a lane (a figure for tests). */
  get size(): number {
    return this.keys().size;
  }

  /** Parks an outbox row in its key's lane, in the caller's transaction (the row leaves the outbox in the same one). */
  park(_tx: WriteTx, row: StoredEvent): void {
    this.db.putSync(laneKey(row), row);
    this.keys().add(row.apiKey);
  }

  /**
   * The next lane in turn, its events read lazily in seq order; that key's turn moves to the end. A lane found empty
   * (planned to its end, or removed by a deletion) loses its turn and the next is read. Undefined: no lane holds any.
   * The events must be read within the caller's transaction.
   */
  nextTurn(): { readonly apiKey: string; readonly events: Iterable<OutboxEvent> } | undefined {
    const turns = this.keys();
    for (const apiKey of turns) {
      turns.delete(apiKey);
      if (this.db.getKeysCount({ ...laneRange(apiKey), limit: 1 }) === 0) continue;
      turns.add(apiKey);
      return { apiKey, events: this.read(apiKey) };
    }
    return undefined;
  }

  /** A lane's events in seq order, each decoded as it is reached (a turn usually reads a few); leaving part-way closes the cursor. */
  private *read(apiKey: string): Generator<OutboxEvent> {
    for (const { value } of this.db.getRange(laneRange(apiKey))) yield eventOf(value);
  }

  /**
   * The key's lane was planned to its end in the caller's transaction: it loses its turn now, so the key's next events
   * are planned as they come. If that transaction fails, the caller must `reload`.
   */
  emptied(apiKey: string): void {
    this.keys().delete(apiKey);
  }

  /** Whether the event is still parked: a deletion may have removed it since it was read. */
  holds(ref: LaneRef): boolean {
    return this.db.doesExist(laneKey(ref));
  }

  /** Takes a planned event out of its lane, in the transaction that planned it. */
  remove(_tx: WriteTx, ref: LaneRef): void {
    this.db.removeSync(laneKey(ref));
  }

  /** Removes, in the caller's transaction, the parked events of `apiKeys` that `match` picks; reads those keys' lanes only. */
  removeWhere(_tx: WriteTx, apiKeys: ReadonlySet<string>, match: (event: StoredEvent) => boolean): number {
    let removed = 0;
    for (const apiKey of apiKeys) {
      for (const { key, value } of Array.from(this.db.getRange(laneRange(apiKey)))) {
        if (!match(value)) continue;
        this.db.removeSync(key);
        removed++;
      }
    }
    return removed;
  }

  /** The keys with parked events, read by one seek per lane (a lane's rows are not read). */
  private keys(): Set<string> {
    if (this.turns !== undefined) return this.turns;
    const turns = new Set<string>();
    let start: Key | undefined;
    for (;;) {
      let first: Key | undefined;
      for (const key of this.db.getKeys({ ...(start === undefined ? {} : { start }), limit: 1 })) first = key;
      if (!Array.isArray(first) || typeof first[0] !== 'string') break;
      turns.add(first[0]);
      start = [first[0], AFTER_EVERY_SEQ];
    }
    return (this.turns = turns);
  }
}

