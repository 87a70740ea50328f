// Owns what an advanced webhook message's endpoints share (DB.webhookBodies and its time index): one row per message, whatever the number of endpoints it went to.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';

/**
 * A message as every endpoint it went to shares it: its body, and (from schema 9) when it was made and about which
 * event, which an endpoint's message not yet attempted is read from (src/delivery/endpoints.ts).
 */
export interface SharedMessage {
  readonly body: string;
  readonly createdAt: number;
  readonly eventType: string;
  readonly eventId: string;
}

/** A row as stored: schema 7 kept the body alone, as a string. */
type StoredShared = SharedMessage | string;

/**
 * A message is one event's body sent to every endpoint that wants it, and each endpoint keeps its own record of it
 * (status, attempts). The body used to live in each record: an event to 100 endpoints wrote its body 100 times when
 * planned and again with every settled attempt (bench/README.md, "Nineteenth session"). It is written here once, by
 * the first record that needs it, and read back with the record.
 */
export class MessageBodies {
  private readonly bodies: Database<StoredShared, Key>;
  private readonly times: Database<null, Key>;

  /**
   * Where the next prune goes on: after the last time row the previous one looked at, so bodies still referenced (a
   * message pending for longer than the retention) are passed over instead of looked at first every time. Undefined:
   * from the oldest.
   */
  private resume: Key | undefined;

  constructor(store: Store) {
    this.bodies = store.records<StoredShared>(DB.webhookBodies);
    this.times = store.records<null>(DB.webhookBodyTimes);
  }

  /** The message's body, with when it was made and its event unless a schema-7 build wrote it. */
  get(apiKey: string, messageId: string): SharedMessage | { readonly body: string } | undefined {
    const stored = this.bodies.get([apiKey, messageId]);
    return typeof stored === 'string' ? { body: stored } : stored;
  }

  /** Writes the shared row unless it is there (the message's other endpoints share it), in the caller's transaction. */
  keep(_tx: WriteTx, apiKey: string, messageId: string, shared: SharedMessage): void {
    if (this.bodies.doesExist([apiKey, messageId])) return;
    this.bodies.putSync([apiKey, messageId], { body: shared.body, createdAt: shared.createdAt, eventType: shared.eventType, eventId: shared.eventId });
    this.times.putSync([shared.createdAt, apiKey, messageId], null);
  }

  /**
   * Removes bodies created before `before` that no message refers to any more (`referenced`, told when the body was
   * made), looking at most at `limit` of them, oldest first from where the last call stopped, in the caller's
   * transaction. A body a pending message still needs stays, and is looked at again once a call has gone through to
   * the end. Answers how many went.
   */
  prune(_tx: WriteTx, before: number, limit: number, referenced: (apiKey: string, messageId: string, createdAt: number) => boolean): number {
    const range = this.resume === undefined ? { end: [before], limit } : { start: this.resume, exclusiveStart: true, end: [before], limit };
    const keys = Array.from(this.times.getKeys(range));
    this.resume = keys.length < limit ? undefined : keys[keys.length - 1];
    let removed = 0;
    for (const key of keys) {
      const [createdAt, apiKey, messageId] = key as [number, string, string];
      if (referenced(apiKey, messageId, createdAt)) continue;
      this.bodies.removeSync([apiKey, messageId]);
      this.times.removeSync(key);
      removed++;
    }
    return removed;
  }
}
