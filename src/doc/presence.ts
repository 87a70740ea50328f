// Owns one document's presence list: users set over REST and users connected for sync, their status and offline expiry.
import type { Database, Key } from 'lmdb';
import { failedPrecondition } from '../errors.js';
import { DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT } from '../limits.js';
import { limitRefusals } from '../metrics/instruments.js';
import type { Store } from '../store/env.js';
import { DB, KEY_END } from '../store/keys.js';
import type { DocumentKey } from '../document-key.js';
import { DocumentWrites, superseded, type DocumentChange } from './document-writes.js';
import { MeasuredMap } from './measured-map.js';

const NO_CHANGE: LivePresenceChange = Object.freeze({ users: Object.freeze([]), removed: Object.freeze([]) });

/** Presence user input (spec 2.19). */
export interface PresenceInput {
  readonly userId: string;
  readonly name?: string;
  readonly email?: string;
  readonly status?: string;
}

/** One row of DB.presence, and (with `connections`) what Get Presence answers. */
export interface PresenceRecord {
  readonly userId: string;
  readonly name?: string;
  readonly email?: string;
  /** Free string (spec 3): online, away, offline, ... */
  readonly status: string;
  /** Who wrote the record last: the REST API or the user's own sync connection. */
  readonly source: 'rest' | 'sync';
  readonly lastUpdated: number;
  /** Set while status is offline; the record disappears offlineTtlMs after it. */
  readonly offlineSince?: number;
}

export interface PresenceView extends PresenceRecord {
  /** Open sync connections of this user on this document (not stored: none survive a restart). */
  readonly connections: number;
}

/** What connected clients are told after a change: users as they now are, and users who left the list. */
export interface LivePresenceChange {
  readonly users: readonly PresenceView[];
  readonly removed: readonly string[];
}

export interface PresenceDeps {
  readonly store: Store;
  readonly now: () => number;
  readonly offlineTtlMs: number;
  /** MAX_PRESENCE_USERS_PER_DOCUMENT (default DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT). */
  readonly maxPresenceUsers?: number;
  /** The document's ordered writes, shared with its annotations (a state of its own when not given). */
  readonly writes?: DocumentWrites;
  /** Told each change once it has committed, in commit order (the live message to the document's sockets). */
  readonly published?: (live: LivePresenceChange) => void;
}

/**
 * A presence record's size as JSON, from its strings' lengths and the fixed rest (90 to 120 characters of names, numbers and
 * punctuation): no encoding and nothing remembered per record (a WeakMap entry would add a sixth to each record).
 */
function presenceBytes(record: PresenceRecord): number {
  return 100 + record.userId.length + record.status.length + (record.name?.length ?? 0) + (record.email?.length ?? 0);
}

/**
 * Every change alters memory before its first await and resolves once committed through the document's writes
 * (src/doc/document-writes.ts); a failed commit rejects and puts the records back. Which connections are open is not
 * stored and is never undone: a connection is open whether or not its presence record was written.
 */
export class PresenceState {
  private readonly db: Database<PresenceRecord, Key>;
  private readonly writes: DocumentWrites;
  /** connectionId -> userId */
  private readonly connections = new Map<string, string>();
  /** userId -> open connections: each view reads it (a walk of `connections` per user made a list O(users x connections)). */
  private readonly connectionCounts = new Map<string, number>();
  /** Every user's view, sorted by userId; undefined once the list or a connection count changed (`list` builds it again). */
  private sorted: readonly PresenceView[] | undefined;

  private constructor(readonly ref: DocumentKey, private readonly deps: PresenceDeps, private readonly users: MeasuredMap<string, PresenceRecord>) {
    this.db = deps.store.records<PresenceRecord>(DB.presence);
    this.writes = deps.writes ?? new DocumentWrites(deps.store);
  }

  /** The users' records' bytes as JSON: what the loaded-documents budget counts of them. */
  get heldBytes(): number {
    return this.users.bytes;
  }

  /**
   * Reads the stored list. No sync connection survives a restart, so users whose record came from a connection
   * are offline from now; records already past their offline delay are dropped.
   */
  static async load(deps: PresenceDeps, ref: DocumentKey): Promise<PresenceState> {
    const db = deps.store.records<PresenceRecord>(DB.presence);
    const prefix = [ref.apiKey, ref.organizationId, ref.documentId];
    const state = new PresenceState(ref, deps, new MeasuredMap(presenceBytes));
    const now = deps.now();
    const put: PresenceRecord[] = [];
    for (const { value } of db.getRange({ start: prefix, end: [...prefix, KEY_END] })) {
      const record = value.source === 'sync' && value.offlineSince === undefined ? { ...value, status: 'offline', offlineSince: now } : value;
      if (record !== value) put.push(record);
      state.users.set(record.userId, record);
    }
    await state.write(put, []);
    await state.expire();
    return state;
  }

  /**
   * The users sorted by userId (MAX_PRESENCE_USERS_PER_DOCUMENT bounds how many there are to sort and send). The sorted
   * views are kept until the list or a connection changes: Get Presence of a full list that did not change since is a
   * filter at most (sorting and copying 1,000 users each time cost ~1 ms, measured; serializing them ~0.4 ms more).
   */
  list(filter: { readonly userIds?: readonly string[]; readonly statuses?: readonly string[] } = {}): readonly PresenceView[] {
    this.sorted ??= [...this.users.values()].sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0)).map((u) => this.view(u));
    if (filter.userIds === undefined && filter.statuses === undefined) return this.sorted;
    const ids = filter.userIds === undefined ? undefined : new Set(filter.userIds);
    const statuses = filter.statuses === undefined ? undefined : new Set(filter.statuses);
    return this.sorted.filter((u) => (ids === undefined || ids.has(u.userId)) && (statuses === undefined || statuses.has(u.status)));
  }

  /** @internal For PresenceChange, and the connection counts: the sorted views no longer hold. */
  forgetList(): void {
    this.sorted = undefined;
  }

  /**
   * Add or Update Presence: sets the given fields; a user not yet listed is added (status online unless given).
   * A user whose record would not change (a heartbeat repeating the same status) is left as it is, `lastUpdated`
   * included: nothing is written or sent for it, and a request that changes no one writes nothing at all.
   * New users past MAX_PRESENCE_USERS_PER_DOCUMENT take the places of users offline longest; when too few are offline
   * the request is refused (FAILED_PRECONDITION naming the limit) and nothing is written.
   */
  upsert(inputs: readonly PresenceInput[]): Promise<LivePresenceChange> {
    const now = this.deps.now();
    const changed = new Map<string, PresenceRecord>();
    for (const { userId, name, email, status } of inputs) {
      const current = changed.get(userId) ?? this.users.get(userId);
      const fields = { userId, ...(name === undefined ? {} : { name }), ...(email === undefined ? {} : { email }) };
      const next = withStatus({ ...current, ...fields, source: 'rest', lastUpdated: now }, status ?? current?.status ?? 'online', now);
      if (current === undefined || !sameRecord(current, next)) changed.set(userId, next);
    }
    if (changed.size === 0) return this.unchanged();
    let added = 0;
    for (const userId of changed.keys()) if (!this.users.has(userId)) added++;
    const room = this.room(added, changed);
    if (room === undefined) {
      limitRefusals.presence_users++;
      const max = this.maxUsers;
      return Promise.reject(failedPrecondition(`data.users: the document's presence would list ${this.users.size + added} users, past the limit of ${max} users a document (MAX_PRESENCE_USERS_PER_DOCUMENT); remove users first; nothing was written`));
    }
    return this.write([...changed.values()], room);
  }

  remove(userIds: readonly string[]): Promise<LivePresenceChange> {
    return this.write([], userIds.filter((id) => this.users.has(id)));
  }

  /**
   * A sync connection of `user` opened: the user is online. A user not listed yet, on a list at its limit, takes the
   * place of the user offline longest; when no one is offline it is left out of the list (counted), and its
   * connection works all the same: presence never refuses a connection (MAX_CONNECTIONS_PER_DOCUMENT bounds those).
   */
  connect(connectionId: string, user: { readonly userId: string; readonly name?: string; readonly email?: string }): Promise<LivePresenceChange> {
    const previous = this.connections.get(connectionId);
    if (previous !== undefined) this.uncount(previous);
    this.connections.set(connectionId, user.userId);
    this.connectionCounts.set(user.userId, this.connectionCount(user.userId) + 1);
    this.sorted = undefined;
    const now = this.deps.now();
    const current = this.users.get(user.userId);
    const room = current === undefined ? this.room(1, new Set([user.userId])) : [];
    if (room === undefined) {
      limitRefusals.presence_users++;
      return this.write([], []);
    }
    const status = current === undefined || current.status === 'offline' ? 'online' : current.status;
    return this.write([withStatus({ ...current, ...user, source: 'sync', lastUpdated: now }, status, now)], room, true);
  }

  /** A sync connection closed: when it was the user's last, the user goes offline (and expires later). */
  disconnect(connectionId: string): Promise<LivePresenceChange> {
    const userId = this.connections.get(connectionId);
    this.connections.delete(connectionId);
    if (userId !== undefined) this.uncount(userId);
    if (userId === undefined || this.connectionCount(userId) > 0) return this.write([], []);
    const current = this.users.get(userId);
    if (current === undefined) return this.write([], []);
    const now = this.deps.now();
    return this.write([withStatus({ ...current, source: 'sync', lastUpdated: now }, 'offline', now)], [], true);
  }

  /** When the earliest offline user expires (ms since epoch), or undefined when no one is offline. */
  nextExpiry(): number | undefined {
    let next: number | undefined;
    for (const user of this.users.values()) {
      if (user.offlineSince === undefined || this.connectionCount(user.userId) > 0) continue;
      const at = user.offlineSince + this.deps.offlineTtlMs;
      next = next === undefined ? at : Math.min(next, at);
    }
    return next;
  }

  /** Drops offline users whose delay has passed. */
  expire(): Promise<LivePresenceChange> {
    const now = this.deps.now();
    const due = [...this.users.values()]
      .filter((u) => u.offlineSince !== undefined && u.offlineSince + this.deps.offlineTtlMs <= now && this.connectionCount(u.userId) === 0)
      .map((u) => u.userId);
    return this.write([], due);
  }

  private connectionCount(userId: string): number {
    return this.connectionCounts.get(userId) ?? 0;
  }

  private uncount(userId: string): void {
    this.sorted = undefined;
    const count = this.connectionCount(userId) - 1;
    if (count > 0) this.connectionCounts.set(userId, count);
    else this.connectionCounts.delete(userId);
  }

  private get maxUsers(): number {
    return this.deps.maxPresenceUsers ?? DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT;
  }

  /**
   * Room for `added` new users: [] when the list has it, else the users to drop for it, offline longest first (they
   * would expire anyway; none with an open connection, none in `keep`), or undefined when too few are offline. A list
   * is answered whole by every Get Presence and join snapshot: 103,000 users made each Get hold the event loop
   * ~160 ms (bench/README.md, "Twentieth session: presence and the provider cache").
   */
  private room(added: number, keep: ReadonlySet<string> | ReadonlyMap<string, unknown>): string[] | undefined {
    const over = this.users.size + added - this.maxUsers;
    if (added === 0 || over <= 0) return [];
    const offline = [...this.users.values()].filter((u) => u.offlineSince !== undefined && this.connectionCount(u.userId) === 0 && !keep.has(u.userId));
    if (offline.length < over) return undefined;
    return offline
      .sort((a, b) => (a.offlineSince ?? 0) - (b.offlineSince ?? 0))
      .slice(0, over)
      .map((u) => u.userId);
  }

  /**
   * A request that changes nothing still must not be answered before what it saw is committed: it resolves once the
   * document's pending changes have, and fails as they would (ABORTED, retry) when one of them did not commit.
   */
  private unchanged(): Promise<LivePresenceChange> {
    if (this.writes.pending === 0) return Promise.resolve(NO_CHANGE);
    return new Promise((resolve, reject) => {
      this.writes.afterPending((ok) => (ok ? resolve(NO_CHANGE) : reject(superseded(undefined))));
    });
  }

  /**
   * `deferrable`: a sync connection's own presence, which no request waits for, may share a later transaction
   * (GROUP_COMMIT_MS): a connection's open otherwise paid a commit of its own (bench/README.md, "Eleventh session").
   */
  private write(put: readonly PresenceRecord[], removed: readonly string[], deferrable = false): Promise<LivePresenceChange> {
    if (put.length === 0 && removed.length === 0) return Promise.resolve(NO_CHANGE);
    return this.writes.submit(new PresenceChange(this, this.users, this.db, put, removed, deferrable));
  }

  /** @internal For PresenceChange: a record as Get Presence and live messages show it. */
  view(record: PresenceRecord): PresenceView {
    return { ...record, connections: this.connectionCount(record.userId) };
  }

  /** @internal For PresenceChange: what a change publishes once committed. */
  published(live: LivePresenceChange): void {
    this.deps.published?.(live);
  }
}

/**
 * One presence change: memory changes when it is made, the rows are written by the group commit, and a failed commit
 * puts the records back. It is also what the caller gets once committed; `users` is built only when asked for
 * (the REST reply does not need it, a live message does).
 */
class PresenceChange implements DocumentChange, LivePresenceChange {
  readonly single: boolean;
  private readonly before = new Map<string, PresenceRecord | undefined>();
  private views: PresenceView[] | undefined;

  constructor(
    private readonly state: PresenceState,
    private readonly records: Map<string, PresenceRecord>,
    private readonly db: Database<PresenceRecord, Key>,
    private readonly put: readonly PresenceRecord[],
    readonly removed: readonly string[],
    readonly deferrable: boolean,
  ) {
    this.single = put.length + removed.length === 1;
    for (const record of put) if (!this.before.has(record.userId)) this.before.set(record.userId, records.get(record.userId));
    for (const userId of removed) if (!this.before.has(userId)) this.before.set(userId, records.get(userId));
    for (const record of put) records.set(record.userId, record);
    for (const userId of removed) records.delete(userId);
    if (put.length + removed.length > 0) state.forgetList();
  }

  get users(): PresenceView[] {
    return (this.views ??= this.put.map((record) => this.state.view(record)));
  }

  write(): void {
    const { apiKey, organizationId, documentId } = this.state.ref;
    for (const record of this.put) this.db.putSync([apiKey, organizationId, documentId, record.userId], record);
    for (const userId of this.removed) this.db.removeSync([apiKey, organizationId, documentId, userId]);
  }

  undo(): void {
    this.state.forgetList();
    for (const [userId, record] of this.before) {
      if (record === undefined) this.records.delete(userId);
      else this.records.set(userId, record);
    }
  }

  committed(): void {
    this.state.published(this);
  }
}

/** Whether two records of one user say the same thing; `lastUpdated` is when that last changed, so it is not compared. */
function sameRecord(a: PresenceRecord, b: PresenceRecord): boolean {
  return a.status === b.status && a.source === b.source && a.name === b.name && a.email === b.email && a.offlineSince === b.offlineSince;
}

/** Sets status, keeping offlineSince only while offline (and stamping it when the user goes offline). */
function withStatus(record: Omit<PresenceRecord, 'status'> & { status?: string }, status: string, now: number): PresenceRecord {
  // Fields added in one fixed order, so every record shares a hidden class (spreads gave each its own, ~0.45 KB).
  const shaped: { -readonly [K in keyof PresenceRecord]: PresenceRecord[K] } = { userId: record.userId, status, source: record.source, lastUpdated: record.lastUpdated };
  if (record.name !== undefined) shaped.name = record.name;
  if (record.email !== undefined) shaped.email = record.email;
  if (status === 'offline') shaped.offlineSince = record.offlineSince ?? now;
  return shaped;
}
