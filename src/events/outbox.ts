// Owns DB.outbox and raising domain events: records and rows written inside the caller's transaction, and the read/claim/ack API a dispatcher uses.
import type { Database, Key } from 'lmdb';
import { timeOrderedHex } from '../ids.js';
import { keyFits } from '../limits.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { rowCount } from '../store/row-count.js';
import { OutboxLanes } from './outbox-lanes.js';
import { eventOf, type StoredEvent } from './outbox-row.js';
import { sourceOf, V1_ACTION, type EventAudience, type EventDraft, type EventPayload, type EventRecorder, type EventType, type OutboxEvent, type StampedEvent } from './types.js';

export interface ClaimOptions {
  readonly limit: number;
  /** How long a claimed event stays invisible to other claims; an unacked event comes back after it. */
  readonly leaseMs: number;
  readonly now: number;
  /** Take claimed events too: a new dispatcher taking over from a dead one (whose claims would hold them until they lapse). */
  readonly reclaim?: boolean;
}

/** A claim held in memory (see `Outbox.claim`). */
interface Lease {
  readonly claimedUntil: number;
  readonly attempts: number;
}

/** What every Outbox over the same database shares (tests and the server may make several over one store). */
interface OutboxShared {
  /** The key this process appended last (undefined: none yet); see `nextSeq`. */
  lastAppended: OutboxKey | undefined;
  /** By `leaseKey` of the event's key. */
  readonly leases: Map<string | number, Lease>;
  /** The rows this process appended lately, by `leaseKey` (see `Outbox.claim`); at most RECENT_ROWS, oldest first. */
  readonly recent: Map<string | number, Appended>;
}

/**
 * How many appended rows `recent` keeps for the claim. A dispatcher in this process claims them within a round or two
 * (it is woken by their commit, and claims up to 100 a round); on a cluster node that does not dispatch, nothing acks
 * them here, so the bound is what such a node holds: each row with its JSON text and the payload object it was made from,
 * ~0.6 MB in all for events of one-comment threads (measured in a one-off script).
 */
const RECENT_ROWS = 256;

/**
 * A row's key: the bare seq on one process; `[seq, node]` in a cluster, where every node appends from its own cache of
 * the state stream, so two nodes appending at once pick the same seq and would otherwise write one key
 * (docs/cluster.md, "Once-only background work"). Rows sort by seq either way.
 */
type OutboxKey = number | readonly [number, string];

/** Which row an event is: its seq and, in a cluster, the node that appended it. */
export type OutboxRef = Pick<OutboxEvent, 'seq' | 'node'>;

/** A bare number is the seq of a row appended on one process. */
function keyOf(ref: OutboxRef | number): OutboxKey {
  if (typeof ref === 'number') return ref;
  return ref.node === undefined ? ref.seq : [ref.seq, ref.node];
}

function seqOfKey(key: Key): number | undefined {
  if (typeof key === 'number') return key;
  if (Array.isArray(key) && typeof key[0] === 'number' && typeof key[1] === 'string') return key[0];
  return undefined;
}

function leaseKey(key: OutboxKey): string | number {
  return typeof key === 'number' ? key : `${key[0]}/${key[1]}`;
}

const sharedByDb = new WeakMap<object, OutboxShared>();

/** A row as this process appended it, with the payload its JSON text was made from (see `Outbox.claim`). */
interface Appended {
  readonly row: StoredEvent;
  readonly data: EventPayload;
}

/** lmdb-js's putSync answers whether it wrote (false: a condition, here MDB_APPEND, refused the write); its types say void. */
interface AppendingPut {
  putSync(key: Key, value: StoredEvent, options: { readonly append: true }): boolean;
}

const APPEND = { append: true } as const;

/** An event's id: its creation millisecond first (12 hex digits), so records keyed by it are written in time order. */
function eventId(now: number): string {
  return `evt_${timeOrderedHex(now)}`;
}

/** Keys are the bare seq number, not [seq]: lmdb-js reads a one-element array key back as a bare number, which get() then misses. */
export class Outbox {
  private readonly db: Database<StoredEvent, Key>;

  private readonly shared: OutboxShared;

  private readonly commitListeners: Array<() => void> = [];

  /** In a cluster, this node's id: it goes into every key this process appends (see `OutboxKey`). */
  private readonly node: string | undefined;

  /** Whether every key this process appends fits (`raisesBounded`): a seq, with the node's id in a cluster. */
  private readonly appendFits: boolean;

  /** The API keys' lanes: events the dispatcher parked when planning them outran their key's share of a round. */
  readonly lanes: OutboxLanes;

  /** Who acts on events (`wants`); undefined: every event is written (a process without the delivery room, tests). */
  private audience: EventAudience | undefined;

  /** The channels that keep a record of events, written in the raising transaction (`raise`). */
  private recorders: readonly EventRecorder[] = [];

  constructor(private readonly store: Store, options: { readonly node?: string } = {}) {
    this.node = options.node;
    this.appendFits = options.node === undefined || keyFits([options.node], 1);
    this.db = store.records<StoredEvent>(DB.outbox);
    this.lanes = new OutboxLanes(store);
    let shared = sharedByDb.get(this.db);
    if (shared === undefined) sharedByDb.set(this.db, (shared = { lastAppended: undefined, leases: new Map(), recent: new Map() }));
    this.shared = shared;
  }

  /** Sets who acts on events (the delivery room, src/delivery/audience.ts): from now on `wants` asks it. */
  setAudience(audience: EventAudience): void {
    this.audience = audience;
  }

  /** Sets the channels that record events with the raising change (the delivery room's activity log and notifications). */
  setRecorders(recorders: readonly EventRecorder[]): void {
    this.recorders = recorders;
  }

  /**
   * Whether an event of `type` under `apiKey` is to be raised at all (a recorder keeps a record of it, or a channel
   * the dispatcher plans for acts on it): one nothing would act on is not (an appender asks before it builds the
   * draft). In a workspace with no delivery channel configured, the usual case, an event was most of a REST comment's
   * cost: its JSON, its row, the dispatcher's round to claim it and the commit that removed it again (bench/README.md,
   * "Fifteenth session"). A channel therefore acts on the events committed while it is configured, not on those
   * committed before (docs/delivery.md, "Which events are written").
   */
  wants(apiKey: string, type: EventType): boolean {
    return this.dispatched(apiKey, type) || this.recorders.some((recorder) => recorder.wants(apiKey, type));
  }

  /**
   * Whether raising an event of `type` writes only bounded rows (GroupedChange.bounded): its outbox row, keyed by a
   * number (and this node's id in a cluster, checked once with `keyFits`), whose put lmdb-js cannot refuse (a refused
   * append falls back to a plain put, `append`), and the records of recorders that say they are bounded
   * (`EventRecorder.bounded`). True when nothing wants it (nothing is written).
   */
  raisesBounded(apiKey: string, organizationId: string, type: EventType): boolean {
    if (!this.appendFits && this.dispatched(apiKey, type)) return false;
    for (const recorder of this.recorders) if (recorder.wants(apiKey, type) && recorder.bounded?.(apiKey, organizationId) !== true) return false;
    return true;
  }

  /** Whether a channel the dispatcher plans for acts on the event: then it needs an outbox row. */
  private dispatched(apiKey: string, type: EventType): boolean {
    return this.audience === undefined || this.audience.wants(apiKey, type);
  }

  /**
   * Raises one event in the caller's transaction: each recorder that keeps a record of it (the activity log, an in-app
   * notification sent at once) writes it, and the event gets an outbox row only when a channel the dispatcher plans for
   * acts on it. Answers the row's seq, or undefined when none was written. The records used to be written by the
   * dispatcher from the outbox row, and an event only the activity log wanted cost a row, a claim, a second commit and
   * the removal of the row: with the record written here a comment with the activity log on wrote about half the bytes
   * (bench/README.md, "Seventeenth session"). A recorder that throws fails the change with it: the record and the
   * change are one write.
   */
  raise(tx: WriteTx, draft: EventDraft, now: number): number | undefined {
    const id = eventId(now);
    let recordedBy: string[] | undefined;
    let event: StampedEvent | undefined;
    for (const recorder of this.recorders) {
      if (!recorder.wants(draft.apiKey, draft.type)) continue;
      event ??= { type: draft.type, apiKey: draft.apiKey, organizationId: draft.organizationId, documentId: draft.documentId, data: draft.data, id, createdAt: now };
      recorder.record(tx, event);
      (recordedBy ??= []).push(recorder.name);
    }
    return this.dispatched(draft.apiKey, draft.type) ? this.append(tx, draft, now, id, recordedBy) : undefined;
  }

  /** Told after a transaction that appended events committed (the worker's wake-up; see src/worker-role.ts). */
  onCommitted(listener: () => void): void {
    this.commitListeners.push(listener);
  }

  /** The appender's transaction committed: its events can be claimed now. Called by whoever appended. */
  committed(): void {
    for (const listener of this.commitListeners) listener();
  }

  /**
   * Writes one event's row in the caller's transaction and answers its seq: one past the highest committed or pending
   * seq. `id`: the event's (`raise` made it); `recordedBy`: the recorders that wrote their records of it. The row is built
   * field by field (no spread or rest: copying unknown keys is V8's slow path, and this runs for every comment written).
   */
  append(_tx: WriteTx, draft: EventDraft, now: number, id = eventId(now), recordedBy?: readonly string[]): number {
    const seq = this.nextSeq();
    const row: StoredEvent = {
      type: draft.type,
      apiKey: draft.apiKey,
      organizationId: draft.organizationId,
      documentId: draft.documentId,
      payload: JSON.stringify(draft.data),
      seq,
      ...(this.node === undefined ? {} : { node: this.node }),
      ...(recordedBy === undefined ? {} : { recordedBy }),
      id,
      actionType: V1_ACTION[draft.type],
      source: sourceOf(draft.type),
      createdAt: now,
      attempts: 0,
    };
    const key = keyOf(row);
    // On one process a seq only grows, so the row goes at the end of the database: MDB_APPEND fills the last page
    // instead of splitting it in half, and a commit of comments writes ~40% fewer bytes for its events (bench/README.md,
    // "Fourteenth session"). A key that is not the last (rows a cluster cache left) is refused by LMDB without writing
    // anything, and the ordinary put writes it. In a cluster two nodes may take one seq, so a refusal would be common
    // (and recorded twice in the state stream): there the put is always ordinary.
    if (this.node !== undefined || !(this.db as unknown as AppendingPut).putSync(key as Key, row, APPEND)) this.db.putSync(key as Key, row);
    this.shared.lastAppended = key;
    const recent = this.shared.recent;
    // A seq appended again (its first transaction failed) takes the newer row; set() alone would keep the old place.
    recent.delete(leaseKey(key));
    recent.set(leaseKey(key), { row, data: draft.data });
    if (recent.size > RECENT_ROWS) recent.delete(recent.keys().next().value as string | number);
    return seq;
  }

  /**
   * The appending transaction failed: its rows are not in the database, and the seqs may be appended again. Only a
   * claim reads `recent`, and only for keys the database holds, so a row forgotten late (its seq already appended
   * again) costs a read from the database, never a wrong event.
   */
  forget(seqs: readonly number[]): void {
    for (const seq of seqs) this.shared.recent.delete(leaseKey(this.node === undefined ? seq : [seq, this.node]));
  }

  /**
   * One past the highest seq, without a cursor when it can: the seq this process appended last is still the highest
   * while its row is there (every append goes through this database's shared state). A failed transaction took that
   * row back, or an ack removed it (the outbox may be empty again): then one reverse scan, as before, so an aborted
   * append leaves no gap and an emptied outbox starts again at 1.
   */
  private nextSeq(): number {
    const last = this.shared.lastAppended;
    if (last !== undefined && this.db.doesExist(last as Key)) return (typeof last === 'number' ? last : last[0]) + 1;
    return this.lastSeq() + 1;
  }

  /** Highest seq written so far (0 when empty). Inside a write transaction this sees the transaction's own rows. */
  lastSeq(): number {
    for (const key of this.db.getKeys({ reverse: true, limit: 1 })) {
      const seq = seqOfKey(key);
      if (seq !== undefined) return seq;
    }
    return 0;
  }

  /** Events not yet planned, in the outbox (`waiting`) and in the keys' lanes (`parked`): LMDB's row counts, no scan. */
  backlog(): { readonly waiting: number; readonly parked: number } {
    return { waiting: rowCount(this.db), parked: this.lanes.events };
  }

  /** Events in seq order after `afterSeq`, claimed or not. */
  read(options: { readonly afterSeq?: number; readonly limit?: number } = {}): OutboxEvent[] {
    const range = this.db.getRange({
      start: (options.afterSeq ?? 0) + 1,
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    });
    return Array.from(range, ({ value }) => eventOf(value));
  }

  /**
   * Takes up to `limit` events no one holds (never claimed, or lease lapsed), leases them and returns them (with
   * `claimedUntil` and `attempts` set). Leases live in memory, not in the rows: rewriting each event to lease it cost a
   * decode, an encode and a put per event (bench/README.md, "REST comment writes"). A lease only keeps a second claim
   * in this process away while the first is planning; after a crash nothing is planning, so every unacked event is
   * claimable at once on restart, as it was after the lease lapsed. `attempts` counts the claims since this start.
   */
  claim(options: ClaimOptions): Promise<OutboxEvent[]> {
    const leases = this.shared.leases;
    const claimed: OutboxEvent[] = [];
    for (const key of this.db.getKeys({ start: 0 })) {
      if (claimed.length >= options.limit) break;
      if (seqOfKey(key) === undefined) continue;
      const id = leaseKey(key as OutboxKey);
      const lease = leases.get(id);
      if (options.reclaim !== true && lease !== undefined && lease.claimedUntil > options.now) continue;
      // A row this process appended is taken as it was written instead of decoded again (most of a claim's cost).
      // The keys come from the database, so a row in `recent` whose transaction failed is never taken (see `forget`).
      const appended = this.shared.recent.get(id);
      const value = appended?.row ?? this.db.get(key);
      if (value === undefined) continue;
      const held: Lease = { claimedUntil: options.now + options.leaseMs, attempts: (lease?.attempts ?? value.attempts) + 1 };
      leases.set(id, held);
      claimed.push(Object.assign(eventOf(value, appended?.data), held));
    }
    return Promise.resolve(claimed);
  }

  /**
   * Removes, in the caller's transaction, the events of `apiKeys` not yet dispatched that `match` picks (those of a
   * deleted document or organization), parked ones included: nothing is planned from them. Returns how many. Reads
   * every outbox row, which holds only what the dispatcher has not yet planned or parked, and those keys' lanes.
   */
  removeWhere(tx: WriteTx, apiKeys: ReadonlySet<string>, match: (event: Pick<OutboxEvent, 'apiKey' | 'organizationId' | 'documentId'>) => boolean): number {
    let removed = 0;
    for (const { key, value } of Array.from(this.db.getRange({ start: 0 }))) {
      if (seqOfKey(key) === undefined || !apiKeys.has(value.apiKey) || !match(value)) continue;
      this.db.removeSync(key);
      this.shared.leases.delete(leaseKey(key as OutboxKey));
      this.shared.recent.delete(leaseKey(key as OutboxKey));
      removed++;
    }
    return removed + this.lanes.removeWhere(tx, apiKeys, match);
  }

  /**
   * Moves claimed events from the outbox to their keys' lanes in the caller's transaction, each row as it is stored
   * (nothing is encoded again but its key). An event a deletion removed since the claim is not parked.
   */
  parkIn(tx: WriteTx, refs: readonly OutboxRef[]): void {
    const { leases, recent } = this.shared;
    for (const ref of refs) {
      const key = keyOf(ref);
      const id = leaseKey(key);
      const row = recent.get(id)?.row ?? this.db.get(key as Key);
      if (row !== undefined) this.lanes.park(tx, row);
      this.db.removeSync(key as Key);
      leases.delete(id);
      recent.delete(id);
    }
  }

  /** Whether the event's row is still there: a dispatcher planning it checks in its transaction (see `removeWhere`). */
  holds(ref: OutboxRef): boolean {
    return this.db.doesExist(keyOf(ref) as Key);
  }

  /** Removes delivered events. Acking an unknown seq is a no-op (at-least-once delivery may ack twice). */
  ack(refs: ReadonlyArray<OutboxRef | number>): Promise<void> {
    return this.store.transaction((tx) => this.ackIn(tx, refs));
  }

  /** `ack` inside the caller's transaction (the dispatcher acks in the transaction that planned the events). */
  ackIn(_tx: WriteTx, refs: ReadonlyArray<OutboxRef | number>): void {
    const { leases, recent } = this.shared;
    for (const ref of refs) {
      const key = keyOf(ref);
      this.db.removeSync(key as Key);
      leases.delete(leaseKey(key));
      recent.delete(leaseKey(key));
    }
  }
}
