// Owns DB.outbox: appending domain events inside the caller's transaction, and the read/claim/ack API a dispatcher uses.
import { randomUUID } from 'node:crypto';
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { V1_ACTION, type EventDraft, type OutboxEvent } from './types.js';

export interface ClaimOptions {
  readonly limit: number;
  /** How long a claimed event stays invisible to other claims; an unacked event comes back after it. */
  readonly leaseMs: number;
  readonly now: number;
}

/** Keys are the bare seq number, not [seq]: lmdb-js reads a one-element array key back as a bare number, which get() then misses. */
export class Outbox {
  private readonly db: Database<OutboxEvent, Key>;

  constructor(private readonly store: Store) {
    this.db = store.records<OutboxEvent>(DB.outbox);
  }

  /** Writes one event in the caller's transaction; its seq is one past the highest committed or pending seq. */
  append(_tx: WriteTx, draft: EventDraft, now: number): OutboxEvent {
    const event: OutboxEvent = {
      ...draft,
      seq: this.lastSeq() + 1,
      id: `evt_${randomUUID().replaceAll('-', '')}`,
      actionType: V1_ACTION[draft.type],
      source: 'comment',
      createdAt: now,
      attempts: 0,
    };
    this.db.putSync(event.seq, event);
    return event;
  }

  /** Highest seq written so far (0 when empty). Inside a write transaction this sees the transaction's own rows. */
  lastSeq(): number {
    for (const key of this.db.getKeys({ reverse: true, limit: 1 })) {
      if (typeof key === 'number') return key;
    }
    return 0;
  }

  private anyClaimable(now: number): boolean {
    for (const { value } of this.db.getRange({ start: 0 })) if (value.claimedUntil === undefined || value.claimedUntil <= now) return true;
    return false;
  }

  /** Events in seq order after `afterSeq`, claimed or not. */
  read(options: { readonly afterSeq?: number; readonly limit?: number } = {}): OutboxEvent[] {
    const range = this.db.getRange({
      start: (options.afterSeq ?? 0) + 1,
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    });
    return Array.from(range, ({ value }) => value);
  }

  /** Takes up to `limit` events no one holds (never claimed, or lease lapsed), leases them and returns them. */
  claim(options: ClaimOptions): Promise<OutboxEvent[]> {
    // The dispatcher asks every poll interval: a read finds nothing to claim without a write transaction and its sync
    // to disk (an idle server committed ten empty transactions a second; issue 18). An event appended after the read
    // is claimed at the next poll.
    if (!this.anyClaimable(options.now)) return Promise.resolve([]);
    return this.store.transaction(() => {
      const claimed: OutboxEvent[] = [];
      for (const { value } of this.db.getRange({ start: 0 })) {
        if (claimed.length >= options.limit) break;
        if (value.claimedUntil !== undefined && value.claimedUntil > options.now) continue;
        const leased: OutboxEvent = { ...value, claimedUntil: options.now + options.leaseMs, attempts: value.attempts + 1 };
        this.db.putSync(value.seq, leased);
        claimed.push(leased);
      }
      return claimed;
    });
  }

  /** Removes delivered events. Acking an unknown seq is a no-op (at-least-once delivery may ack twice). */
  ack(seqs: readonly number[]): Promise<void> {
    return this.store.transaction(() => {
      for (const seq of seqs) this.db.removeSync(seq);
    });
  }
}
