// Owns the bodies of advanced webhook messages (DB.webhookBodies and its time index): one row per message, whatever the number of endpoints it went to.
import type { Database, Key } from 'lmdb';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';

/**
 * A message is one event's body sent to every endpoint that wants it, and each endpoint keeps its own record of it
 * (status, attempts). The body used to live in each record: an event to 100 endpoints wrote its body 100 times when
 * planned and again with every settled attempt (bench/README.md, "Nineteenth session"). It is written here once, by
 * the first record that needs it, and read back with the record.
 */
export class MessageBodies {
  private readonly bodies: Database<string, Key>;
  private readonly times: Database<null, Key>;

  /**
   * Where the next prune goes on: after the last time row the previous one looked at, so bodies still referenced (a
   * message pending for longer than the retention) are passed over instead of looked at first every time. Undefined:
   * from the oldest.
   */
  private resume: Key | undefined;

  constructor(store: Store) {
    this.bodies = store.records<string>(DB.webhookBodies);
    this.times = store.records<null>(DB.webhookBodyTimes);
  }

  get(apiKey: string, messageId: string): string | undefined {
    return this.bodies.get([apiKey, messageId]);
  }

  /** Writes the body unless it is there (the message's other endpoints share it), in the caller's transaction. */
  keep(_tx: WriteTx, apiKey: string, messageId: string, body: string, createdAt: number): void {
    if (this.bodies.doesExist([apiKey, messageId])) return;
    this.bodies.putSync([apiKey, messageId], body);
    this.times.putSync([createdAt, apiKey, messageId], null);
  }

  /**
   * Removes bodies created before `before` that no message refers to any more (`referenced`), looking at most at
   * `limit` of them, oldest first from where the last call stopped, in the caller's transaction. A body a pending
   * message still needs stays, and is looked at again once a call has gone through to the end. Answers how many went.
   */
  prune(_tx: WriteTx, before: number, limit: number, referenced: (apiKey: string, messageId: string) => boolean): number {
    const range = this.resume === undefined ? { end: [before], limit } : { start: this.resume, exclusiveStart: true, end: [before], limit };
    const keys = Array.from(this.times.getKeys(range));
    this.resume = keys.length < limit ? undefined : keys[keys.length - 1];
    let removed = 0;
    for (const key of keys) {
      const [, apiKey, messageId] = key as [number, string, string];
      if (referenced(apiKey, messageId)) continue;
      this.bodies.removeSync([apiKey, messageId]);
      this.times.removeSync(key);
      removed++;
    }
    return removed;
  }
}
