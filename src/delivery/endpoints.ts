// Owns advanced webhook endpoints (upstream 2.10) and their message/attempt log: DB.webhookEndpoints, DB.webhookMessages and its time index.
import { randomBytes } from 'node:crypto';
import type { Database, Key } from 'lmdb';
import { randomId, type Secrets } from '../auth/secrets.js';
import { alreadyExists, invalidArgument, notFound } from '../errors.js';
import { limitRefusals } from '../metrics/instruments.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { MessageBodies, type SharedMessage } from './message-bodies.js';
import { TimeIndexed } from './time-index.js';
import { ScopedMemo } from '../scoped-memo.js';

/**
 * Most advanced webhook endpoints one API key may hold. Every event is planned for each of them in the dispatcher's
 * transaction, on the event loop every workspace shares: 100 endpoints × 100 events held it 370 ms in one round
 * (bench/README.md, "Eighteenth session").
 */
export const MAX_ENDPOINTS_PER_KEY = 100;

export interface EndpointRecord {
  readonly id: string;
  readonly url: string;
  readonly description: string | null;
  readonly filterTypes: string[] | null;
  readonly channels: string[] | null;
  readonly disabled: boolean;
  readonly rateLimit: number | null;
  readonly uid: string | null;
  readonly metadata: Record<string, string>;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** `whsec_...`, sealed with the server key. */
  readonly sealedSecret: string;
  /** Set at the first failure after a success; five days of failures disable the endpoint. */
  readonly failingSince: number | null;
  /** Why Plait disabled it, when it did. */
  readonly disabledReason?: string;
}

/** Spec 2.13: the record without its secret and failure clock, timestamps as ISO strings. */
export type EndpointView = Omit<EndpointRecord, 'createdAt' | 'updatedAt' | 'sealedSecret' | 'failingSince' | 'disabledReason'> & {
  readonly createdAt: string;
  readonly updatedAt: string;
};

export interface EndpointInput {
  readonly url?: string;
  readonly description?: string | null;
  readonly filterTypes?: string[] | null;
  readonly channels?: string[] | null;
  readonly disabled?: boolean;
  readonly rateLimit?: number | null;
  readonly uid?: string | null;
  readonly metadata?: Record<string, string>;
}

export interface AttemptRecord {
  readonly id: string;
  readonly timestamp: string;
  readonly attempt: number;
  readonly url: string;
  readonly status: 'success' | 'fail';
  readonly responseStatusCode: number | null;
  readonly response: string;
  readonly trigger: 'scheduled' | 'manual';
}

export interface MessageRecord {
  readonly id: string;
  readonly endpointId: string;
  readonly eventType: string;
  readonly eventId: string;
  readonly body: string;
  readonly createdAt: number;
  readonly status: 'pending' | 'success' | 'fail';
  readonly attempts: AttemptRecord[];
  readonly resends: number;
}

export function viewEndpoint(record: EndpointRecord): EndpointView {
  return {
    id: record.id,
    url: record.url,
    description: record.description,
    filterTypes: record.filterTypes,
    channels: record.channels,
    disabled: record.disabled,
    rateLimit: record.rateLimit,
    uid: record.uid,
    metadata: record.metadata,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
  };
}

const ENDPOINT_NOT_FOUND = 'Advanced webhook endpoint not found.';

/**
 * A message as stored: without its body, which its endpoints share (src/delivery/message-bodies.ts). Records written
 * before schema 7 still hold it and are read as they are. From schema 9 a message planned for an endpoint has no
 * record until its first attempt settles: its time-index row stands for it, with what its endpoints share
 * (`Endpoints.implied`), as planning wrote a record per job that said only "pending, no attempt".
 */
type StoredMessage = Omit<MessageRecord, 'body'> & { readonly body?: string };

/** What a message listing filters on, kept in its time-index row. */
interface MessageSummary {
  readonly status: MessageRecord['status'];
}

export class Endpoints {
  private readonly endpoints: Database<EndpointRecord, Key>;
  /** Listed under [apiKey, endpointId], newest first by `createdAt`. */
  private readonly messages: TimeIndexed<StoredMessage, MessageSummary>;
  private readonly bodies: MessageBodies;
  /** While `memoized` runs: each API key's endpoints as `all` read them. */
  private readonly memo = new ScopedMemo<string, EndpointRecord[]>();

  /**
   * @param removed called inside an endpoint's deletion transaction: what else is kept about it goes with it (the
   *   runner's proof of its target, src/delivery/service.ts).
   */
  constructor(private readonly store: Store, private readonly secrets: Secrets, private readonly removed?: (tx: WriteTx, apiKey: string, endpointId: string) => void) {
    this.endpoints = store.records<EndpointRecord>(DB.webhookEndpoints);
    this.bodies = new MessageBodies(store);
    this.messages = new TimeIndexed<StoredMessage, MessageSummary>(store, {
      records: DB.webhookMessages,
      index: DB.webhookMessageTimes,
      summarize: (message) => ({ status: message.status }),
      // The record does not carry its API key: the stored key [apiKey, endpointId, messageId] does.
      scopeOf: (_message, key) => [String((key as unknown[])[0]), String((key as unknown[])[1])],
      timeOf: (message) => message.createdAt,
      implied: ([apiKey, endpointId, createdAt, messageId], summary) => this.implied(apiKey, endpointId, messageId, createdAt, summary.status),
    });
  }

  get(apiKey: string, endpointId: string): EndpointRecord | undefined {
    return this.endpoints.get([apiKey, endpointId]);
  }

  require(apiKey: string, endpointId: string): EndpointRecord {
    const record = this.get(apiKey, endpointId);
    if (record === undefined) throw notFound(ENDPOINT_NOT_FOUND);
    return record;
  }

  all(apiKey: string): EndpointRecord[] {
    const memo = this.memo.current;
    const known = memo?.get(apiKey);
    if (known !== undefined) return known;
    const all = Array.from(this.endpoints.getRange({ start: [apiKey], end: [apiKey, '\uffff'] }), ({ value }) => value);
    memo?.set(apiKey, all);
    return all;
  }

  /**
   * Runs `body` (synchronous, inside one planning transaction, which writes no endpoint) with each API key's endpoints
   * read once: planning read and decoded all of them again for every event, one record per job planned.
   */
  memoized<T>(body: () => T): T {
    return this.memo.run(body);
  }

  async create(apiKey: string, input: EndpointInput & { url: string }, now: number): Promise<EndpointRecord> {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const record: EndpointRecord = {
      id: `ep_${randomId(24)}`,
      url: input.url,
      description: input.description ?? null,
      filterTypes: input.filterTypes ?? null,
      channels: input.channels ?? null,
      disabled: input.disabled ?? false,
      rateLimit: input.rateLimit ?? null,
      uid: input.uid ?? null,
      metadata: input.metadata ?? {},
      createdAt: now,
      updatedAt: now,
      sealedSecret: this.secrets.encrypt(secret),
      failingSince: null,
    };
    await this.store.transaction(() => {
      const existing = this.all(apiKey);
      if (existing.length >= MAX_ENDPOINTS_PER_KEY) {
        limitRefusals.webhook_endpoints_per_key++;
        throw invalidArgument(`an API key holds at most ${MAX_ENDPOINTS_PER_KEY} advanced webhook endpoints; delete one before creating another`);
      }
      this.checkUid(existing, record.uid, record.id);
      this.endpoints.putSync([apiKey, record.id], record);
    });
    return record;
  }

  /** A `uid` names one endpoint of the API key (Svix's rule): another endpoint's is ALREADY_EXISTS, at create and update alike. */
  private checkUid(endpoints: readonly EndpointRecord[], uid: string | null, self: string): void {
    if (uid !== null && endpoints.some((e) => e.uid === uid && e.id !== self)) throw alreadyExists(`data.uid "${uid}" is already used by another endpoint`);
  }

  /** Partial update; `null` clears an optional field. Re-enabling clears the failure clock. */
  async update(apiKey: string, endpointId: string, input: EndpointInput, now: number): Promise<EndpointRecord> {
    return this.store.transaction(() => {
      const current = this.require(apiKey, endpointId);
      if (input.uid !== undefined && input.uid !== current.uid) this.checkUid(this.all(apiKey), input.uid, endpointId);
      const next: EndpointRecord = {
        ...current,
        ...Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)),
        ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
        ...(input.disabled === false ? { failingSince: null, disabledReason: undefined } : {}),
        updatedAt: now,
      } as EndpointRecord;
      this.endpoints.putSync([apiKey, endpointId], next);
      return next;
    });
  }

  /** Deletes the endpoint and its messages; its secret is gone with it (and its target's proof), and its pending deliveries cancel when due. */
  async remove(apiKey: string, endpointId: string): Promise<void> {
    await this.store.transaction((tx) => {
      this.require(apiKey, endpointId);
      this.endpoints.removeSync([apiKey, endpointId]);
      this.messages.removeScope(tx, [apiKey, endpointId]);
      this.removed?.(tx, apiKey, endpointId);
    });
  }

  secret(record: EndpointRecord): string {
    return this.secrets.decrypt(record.sealedSecret);
  }

  /** Endpoint rows written by the delivery channel (failure clock, auto-disable) inside its settlement. */
  put(_tx: WriteTx, apiKey: string, record: EndpointRecord): void {
    this.endpoints.putSync([apiKey, record.id], record);
  }

  message(apiKey: string, endpointId: string, messageId: string): MessageRecord | undefined {
    const stored = this.messages.get([apiKey, endpointId], messageId);
    if (stored !== undefined) return this.withBody(apiKey, stored);
    const shared = this.bodies.get(apiKey, messageId);
    if (shared === undefined || !('createdAt' in shared)) return undefined;
    const summary = this.messages.indexed([apiKey, endpointId], shared.createdAt, messageId);
    return summary === undefined ? undefined : impliedRecord(endpointId, messageId, shared, summary.status);
  }

  /** Writes the endpoint's record of the message; its body is written once for all the message's endpoints. */
  putMessage(tx: WriteTx, apiKey: string, message: MessageRecord): void {
    this.bodies.keep(tx, apiKey, message.id, message);
    this.messages.put(tx, [apiKey, message.endpointId], stored(message));
  }

  /**
   * Planning: a new pending message of the endpoint, with no attempt (the caller made sure it has none: its job is
   * not there). Only its time-index row is written; reads make the record from it and the shared row until an attempt
   * settles (`implied`). `bodyKept`: an earlier endpoint of the same message wrote the shared row in this transaction,
   * so it is not looked for again (an event to 100 endpoints looked 100 times).
   */
  addMessage(tx: WriteTx, apiKey: string, message: MessageRecord, bodyKept: boolean): void {
    if (!bodyKept) this.bodies.keep(tx, apiKey, message.id, message);
    this.messages.putImplied(tx, [apiKey, message.endpointId], stored(message));
  }

  /** The record a time-index row without one stands for (planned, never attempted), made from the shared row. */
  private implied(apiKey: string, endpointId: string, messageId: string, createdAt: number, status: MessageRecord['status']): StoredMessage | undefined {
    const shared = this.bodies.get(apiKey, messageId);
    // A row of a message whose shared row went (an older build's index row left without its record) stands for nothing.
    if (shared === undefined || !('createdAt' in shared) || shared.createdAt !== createdAt) return undefined;
    return impliedRecord(endpointId, messageId, shared, status);
  }

  /**
   * The endpoint's newest `limit` messages (with `status`, if given), newest first: reads no further than that, in
   * chunks with turns of the event loop between them (a status few messages have may walk the whole log).
   */
  async listMessages(apiKey: string, endpointId: string, limit: number, status?: MessageRecord['status']): Promise<MessageRecord[]> {
    const rows = (await this.messages.page([apiKey, endpointId], (summary) => status === undefined || summary.status === status, { pageSize: limit, order: 'desc' })).rows;
    return rows.map((stored) => this.withBody(apiKey, stored));
  }

  private withBody(apiKey: string, stored: StoredMessage): MessageRecord {
    return stored.body !== undefined ? (stored as MessageRecord) : { ...stored, body: this.bodies.get(apiKey, stored.id)?.body ?? '' };
  }

  /**
   * Removes settled messages (`success`, `fail`) created before `before`, with their attempts, across every endpoint,
   * at most `limit` in one transaction; a pending message stays until it settles. Answers how many went.
   */
  pruneMessages(before: number, limit = 1000): Promise<number> {
    return this.store.transaction((tx) => {
      let removed = 0;
      for (const key of this.endpoints.getKeys({})) {
        if (removed >= limit) break;
        const [apiKey, endpointId] = key as [string, string];
        removed += this.messages.removeBefore(tx, [apiKey, endpointId], before, (summary) => summary.status !== 'pending', limit - removed);
      }
      // Then the bodies of that time no endpoint's message refers to any more (pruned above, or their endpoint deleted).
      if (removed < limit) removed += this.bodies.prune(tx, before, limit - removed, this.referencedBy());
      return removed;
    });
  }

  /**
   * Whether any endpoint of the key still has the message: a record, or the index row of one not yet attempted, which
   * is all a planned message has (at the body's time: every endpoint's record of a message has the time of the first).
   * Each key's endpoints are read once.
   */
  private referencedBy(): (apiKey: string, messageId: string, createdAt: number) => boolean {
    const endpointIds = new Map<string, string[]>();
    return (apiKey, messageId, createdAt) => {
      let ids = endpointIds.get(apiKey);
      if (ids === undefined) endpointIds.set(apiKey, (ids = Array.from(this.endpoints.getKeys({ start: [apiKey], end: [apiKey, '\uffff'] }), (key) => String((key as unknown[])[1]))));
      return ids.some((endpointId) => this.messages.has([apiKey, endpointId], messageId) || this.messages.indexed([apiKey, endpointId], createdAt, messageId) !== undefined);
    };
  }

  /** Indexes by time the messages written before schema 4, once. */
  buildIndex(): Promise<number> {
    return this.messages.build();
  }
}

/** The record as stored, without its body. Field by field: object rest is V8's slow path, and this runs for every endpoint of every event and every attempt. */
function stored(message: MessageRecord): StoredMessage {
  return {
    id: message.id,
    endpointId: message.endpointId,
    eventType: message.eventType,
    eventId: message.eventId,
    createdAt: message.createdAt,
    status: message.status,
    attempts: message.attempts,
    resends: message.resends,
  };
}

/** A planned message never attempted, as its record would say (`Endpoints.addMessage` wrote none). */
function impliedRecord(endpointId: string, messageId: string, shared: SharedMessage, status: MessageRecord['status']): MessageRecord {
  return { id: messageId, endpointId, eventType: shared.eventType, eventId: shared.eventId, body: shared.body, createdAt: shared.createdAt, status, attempts: [], resends: 0 };
}

/** Svix-style paging over endpoints ordered by id: `iterator` is the last id of the page, `prevIterator` the first. */
export function pageEndpoints(all: readonly EndpointRecord[], limit: number, iterator: string | undefined): { endpoints: EndpointView[]; iterator: string | null; prevIterator: string | null; done: boolean } {
  const sorted = [...all].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const after = iterator === undefined ? undefined : decodeIterator(iterator);
  const rest = after === undefined ? sorted : sorted.filter((e) => e.id > after);
  const page = rest.slice(0, limit);
  const done = rest.length <= limit;
  const first = page[0];
  const last = page.at(-1);
  return {
    endpoints: page.map(viewEndpoint),
    iterator: done || last === undefined ? null : encodeIterator(last.id),
    prevIterator: after === undefined || first === undefined ? null : encodeIterator(first.id),
    done,
  };
}

function encodeIterator(id: string): string {
  return Buffer.from(id).toString('base64url');
}

function decodeIterator(iterator: string): string {
  const id = Buffer.from(iterator, 'base64url').toString('utf8');
  if (!id.startsWith('ep_')) throw invalidArgument('data.iterator is not an iterator returned by this operation');
  return id;
}
