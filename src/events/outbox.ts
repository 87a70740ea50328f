// Owns DB.outbox: appending domain events inside the caller's transaction, and the read/claim/ack API a dispatcher uses.
import { randomUUID } from 'node:crypto';
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { V1_ACTION, type EventDraft, type EventPayload, type OutboxEvent } from './types.js';

export interface ClaimOptions {
  readonly limit: number;
  /** How long a claimed event stays invisible to other claims; an unacked event comes back after it. */
  readonly leaseMs: number;
  readonly now: number;
}

/** A claim held in memory (see `Outbox.claim`). */
interface Lease {
  readonly claimedUntil: number;
  readonly attempts: number;
}

/** What every Outbox over the same database shares (tests and the server may make several over one store). */
interface OutboxShared {
  /** The seq this process appended last (0: none yet); see `nextSeq`. */
  lastAppended: number;
  readonly leases: Map<number, Lease>;
}

const sharedByDb = new WeakMap<object, OutboxShared>();

/**
 * One row of DB.outbox as stored: the event with its `data` as JSON text (`payload`). Decoding a whole comment payload
 * was most of a claim, and a channel the API key has not configured never reads it: `data` is parsed on first read
 * (`eventOf`). Rows written before schema 2 hold `data` itself and are read as they are.
 */
type StoredEvent = Omit<OutboxEvent, 'data'> & ({ readonly payload: string; readonly data?: undefined } | { readonly payload?: undefined; readonly data: EventPayload });

/**
 * The event of a row, its `data` parsed when first read: an own, enumerable getter (a spread copies it). Built as one
 * literal, field by field: object rest and defineProperty were the top frame of a claim.
 */
function eventOf(row: StoredEvent): OutboxEvent {
  const payload = row.payload;
  if (payload === undefined) return row;
  let data: EventPayload | undefined;
  return {
    type: row.type,
    apiKey: row.apiKey,
    organizationId: row.organizationId,
    documentId: row.documentId,
    seq: row.seq,
    id: row.id,
    actionType: row.actionType,
    source: row.source,
    createdAt: row.createdAt,
    attempts: row.attempts,
    get data(): EventPayload {
      return (data ??= JSON.parse(payload) as EventPayload);
    },
  };
}

/** Keys are the bare seq number, not [seq]: lmdb-js reads a one-element array key back as a bare number, which get() then misses. */
export class Outbox {
  private readonly db: Database<StoredEvent, Key>;

  private readonly shared: OutboxShared;

  constructor(private readonly store: Store) {
    this.db = store.records<StoredEvent>(DB.outbox);
    let shared = sharedByDb.get(this.db);
    if (shared === undefined) sharedByDb.set(this.db, (shared = { lastAppended: 0, leases: new Map() }));
    this.shared = shared;
  }

  /**
   * Writes one event in the caller's transaction and answers its seq: one past the highest committed or pending seq.
   * The row is built field by field (no spread or rest: copying unknown keys is V8's slow path, and this runs for
   * every comment written).
   */
  append(_tx: WriteTx, draft: EventDraft, now: number): number {
    const seq = this.nextSeq();
    const row: StoredEvent = {
      type: draft.type,
      apiKey: draft.apiKey,
      organizationId: draft.organizationId,
      documentId: draft.documentId,
      payload: JSON.stringify(draft.data),
      seq,
      id: `evt_${randomUUID().replaceAll('-', '')}`,
      actionType: V1_ACTION[draft.type],
      source: 'comment',
      createdAt: now,
      attempts: 0,
    };
    this.db.putSync(seq, row);
    this.shared.lastAppended = seq;
    return seq;
  }

  /**
   * One past the highest seq, without a cursor when it can: the seq this process appended last is still the highest
   * while its row is there (every append goes through this database's shared state). A failed transaction took that
   * row back, or an ack removed it (the outbox may be empty again): then one reverse scan, as before, so an aborted
   * append leaves no gap and an emptied outbox starts again at 1.
   */
  private nextSeq(): number {
    const last = this.shared.lastAppended;
    if (last > 0 && this.db.doesExist(last)) return last + 1;
    return this.lastSeq() + 1;
  }

  /** Highest seq written so far (0 when empty). Inside a write transaction this sees the transaction's own rows. */
  lastSeq(): number {
    for (const key of this.db.getKeys({ reverse: true, limit: 1 })) {
      if (typeof key === 'number') return key;
    }
    return 0;
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
    for (const seq of this.db.getKeys({ start: 0 })) {
      if (claimed.length >= options.limit) break;
      if (typeof seq !== 'number') continue;
      const lease = leases.get(seq);
      if (lease !== undefined && lease.claimedUntil > options.now) continue;
      const value = this.db.get(seq);
      if (value === undefined) continue;
      const held: Lease = { claimedUntil: options.now + options.leaseMs, attempts: (lease?.attempts ?? value.attempts) + 1 };
      leases.set(seq, held);
      claimed.push(Object.assign(eventOf(value), held));
    }
    return Promise.resolve(claimed);
  }

  /** Removes delivered events. Acking an unknown seq is a no-op (at-least-once delivery may ack twice). */
  ack(seqs: readonly number[]): Promise<void> {
    return this.store.transaction((tx) => this.ackIn(tx, seqs));
  }

  /** `ack` inside the caller's transaction (the dispatcher acks in the transaction that planned the events). */
  ackIn(_tx: WriteTx, seqs: readonly number[]): void {
    const leases = this.shared.leases;
    for (const seq of seqs) {
      this.db.removeSync(seq);
      leases.delete(seq);
    }
  }
}
