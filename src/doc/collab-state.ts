// Owns per-document comment and presence state behind a host seam: loaded once per host, run serially, changes published.
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Outbox } from '../events/outbox.js';
import type { Store } from '../store/env.js';
import { removeRangeInBatches } from '../store/chunked-scan.js';
import { DB } from '../store/keys.js';
import { threadRanges } from '../store/thread-times.js';
import { documentKeyString, type DocumentKey } from '../document-key.js';
import type { ConnectionListener, DocumentActorLoader, DocumentActorView, PeerInfo } from './peer.js';
import { AnnotationState, type AnnotationDeps, type LiveAnnotationChange, type Mutation } from './annotations/state.js';
import { DocumentWrites } from './document-writes.js';
import { PresenceState, type LivePresenceChange, type PresenceDeps } from './presence.js';
import { DEFAULT_MAX_COMMENT_THREAD_BYTES, DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT } from '../limits.js';

/** The body of the live WebSocket message (docs/comments-and-presence.md). */
export interface LiveMessage {
  readonly organizationId: string;
  readonly documentId: string;
  /** true: `annotations` and `presence.users` are the complete current lists (sent on join), not changes. */
  readonly snapshot: boolean;
  readonly annotations: readonly LiveAnnotationChange[];
  readonly presence: LivePresenceChange;
}

/** What presence needs of a sync connection: the part of PeerInfo a REST caller or a test can also supply. */
export type ConnectionPeer = Pick<PeerInfo, 'sessionId' | 'userId' | 'name' | 'email' | 'extensions'>;

export interface CollabDeps {
  readonly store: Store;
  readonly outbox: Outbox;
  readonly now: () => number;
  readonly offlineTtlMs: number;
  /** MAX_COMMENT_THREAD_BYTES (0: none; default DEFAULT_MAX_COMMENT_THREAD_BYTES). */
  readonly maxCommentThreadBytes?: number;
  /** MAX_PRESENCE_USERS_PER_DOCUMENT (default DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT). */
  readonly maxPresenceUsers?: number;
  readonly actors: DocumentActorLoader;
  readonly encode: (message: LiveMessage) => Uint8Array;
  readonly log: Logger;
}

export interface CollabDocument {
  readonly annotations: AnnotationState;
  readonly presence: PresenceState;
}

/**
 * One document's state, and the deps its annotations and presence share: one object per document instead of a deps
 * object and a `published` closure for each of them (~1 KB a loaded document).
 */
class Loaded implements CollabDocument, AnnotationDeps, PresenceDeps {
  /** The document's changes on their way to disk, shared by annotations and presence so they commit in one order. */
  readonly writes: DocumentWrites;
  readonly store: Store;
  readonly outbox: Outbox;
  readonly now: () => number;
  readonly offlineTtlMs: number;
  readonly maxCommentThreadBytes: number;
  readonly maxPresenceUsers: number;
  /** Set by CollabDocuments.load before anyone can reach this object through `loaded`. */
  annotations!: AnnotationState;
  presence!: PresenceState;
  /** Connections that take live messages (`ext=1`), counted from the connection events; with none, none is built. */
  listeners = 0;
  timer?: NodeJS.Timeout | undefined;
  /** When the armed timer fires (ms since epoch). */
  timerAt?: number | undefined;

  constructor(private readonly owner: CollabDocuments, private readonly host: DocumentActorView, private readonly ref: DocumentKey, deps: CollabDeps) {
    this.store = deps.store;
    this.outbox = deps.outbox;
    this.now = deps.now;
    this.offlineTtlMs = deps.offlineTtlMs;
    this.maxCommentThreadBytes = deps.maxCommentThreadBytes ?? DEFAULT_MAX_COMMENT_THREAD_BYTES;
    this.maxPresenceUsers = deps.maxPresenceUsers ?? DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT;
    this.writes = new DocumentWrites(deps.store);
  }

  /** What annotations (a list of changes) and presence (one change object) tell once a change has committed. */
  published(live: readonly LiveAnnotationChange[] | LivePresenceChange): void {
    if (isAnnotationChanges(live)) this.owner.publish(this.host, this.ref, this, live, NO_PRESENCE);
    else this.owner.publish(this.host, this.ref, this, [], live);
  }
}

function isAnnotationChanges(live: readonly LiveAnnotationChange[] | LivePresenceChange): live is readonly LiveAnnotationChange[] {
  return Array.isArray(live);
}

const NO_PRESENCE: LivePresenceChange = { users: [], removed: [] };
/** Times a read or a join snapshot is built again when a change it held failed to commit before it went out. */
const ATTEMPTS = 3;

/**
 * Changes follow src/doc/document-writes.ts: a task changes memory inside the host's mailbox and submits its writes;
 * the mailbox goes on with its next task while the REST caller waits for the commit. Nothing leaves before it is
 * committed: live messages go out from the commit, in commit order; reads and join snapshots wait until what they saw
 * has committed, and are built again if some of it failed.
 */
export class CollabDocuments {
  /** Each host's state (or its first load); the state goes when its host goes. */
  private readonly loaded = new WeakMap<DocumentActorView, Loaded | Promise<Loaded>>();
  /** Documents with an armed expiry timer: disarmed when the document unloads, is deleted, or the server stops. */
  private readonly armed = new Map<string, { readonly ref: DocumentKey; readonly doc: Loaded }>();
  /**
   * Each loaded document's changes on their way to disk, kept after it unloads until they have landed: a load of the
   * same document reads after them. Not a barrier on the whole group commit, which would also wait for other
   * documents' deferred changes (a sync connection's presence, GroupedChange.deferrable) and put their commit in
   * this open's path.
   */
  private readonly writesOf = new Map<string, DocumentWrites>();
  /** Told every committed annotation change, whether or not a socket listens (Memory records suggestion decisions). */
  private readonly committedListeners: Array<(ref: DocumentKey, changes: readonly LiveAnnotationChange[]) => void> = [];

  constructor(private readonly deps: CollabDeps) {
    // Threads and presence are held as long as their document is loaded: the budget counts them with it, so a key that
    // fills many documents with comments has them unloaded like documents large as stored.
    deps.actors.measureBeside?.((host) => {
      const doc = this.loaded.get(host);
      return doc === undefined || doc instanceof Promise ? 0 : doc.annotations.heldBytes + doc.presence.heldBytes;
    });
    // The timer's callback holds the host: left armed, it would keep an unloaded document in memory until it fired.
    deps.actors.onUnloaded?.((ref) => {
      const key = documentKeyString(ref);
      this.disarm(key);
      this.forgetWrites(key);
    });
  }

  /** Drops a document's writes from `writesOf` once nothing of them is pending (at once when nothing is). */
  private forgetWrites(key: string): void {
    const writes = this.writesOf.get(key);
    if (writes === undefined) return;
    if (writes.pending === 0) this.writesOf.delete(key);
    else writes.afterPending(() => this.forgetWrites(key));
  }

  /** Documents whose writes are kept in `writesOf` (tests: it returns to 0 once documents are unloaded or deleted). */
  get trackedWrites(): number {
    return this.writesOf.size;
  }

  /** Documents with an armed presence expiry timer (tests, metrics). */
  get armedTimers(): number {
    return this.armed.size;
  }

  /** Runs `task` in the document's host with its state loaded; answers once everything `task` saw has committed. */
  read<T>(ref: DocumentKey, task: (doc: CollabDocument) => T): Promise<T> {
    return this.deps.actors.use(ref, (host) => this.readIn(host, ref, task, 1));
  }

  private async readIn<T>(host: DocumentActorView, ref: DocumentKey, task: (doc: CollabDocument) => T, attempt: number): Promise<T> {
    const seen = await host.run(() => this.inState(host, ref, (doc) => ({ value: task(doc), committed: whenCommitted(doc.writes) })));
    if (seen.committed === undefined || (await seen.committed)) return seen.value;
    if (attempt >= ATTEMPTS) throw unavailable('recent changes to this document failed to commit; retry shortly');
    return this.readIn(host, ref, task, attempt + 1);
  }

  /** Runs an annotation change in the document's mailbox; resolves with its answer once it has committed. */
  annotations<T>(ref: DocumentKey, change: (state: AnnotationState) => Promise<Mutation<T>>): Promise<T> {
    return this.deps.actors.use(ref, async (host) => {
      // The task returns the commit boxed (a bare promise would make the mailbox wait for it): the actor goes on.
      const staged = await host.run(() => this.inState(host, ref, (doc) => ({ result: change(doc.annotations) })));
      return (await staged.result).data;
    });
  }

  /**
   * Runs a presence change in the document's mailbox and re-arms the offline expiry; resolves once committed with
   * the change (its `users` views are built only when read).
   */
  presence(ref: DocumentKey, change: (state: PresenceState) => Promise<LivePresenceChange>): Promise<LivePresenceChange> {
    return this.inHost(ref, (host, doc) => this.changePresence(host, ref, doc, change));
  }

  /** A sync connection joined / left, for callers outside the mailbox (the server uses `connectionListener`). */
  connect(ref: DocumentKey, peer: ConnectionPeer): Promise<LivePresenceChange> {
    return this.inHost(ref, (host, doc) => this.joined(host, ref, doc, peer));
  }

  disconnect(ref: DocumentKey, peer: ConnectionPeer): Promise<LivePresenceChange> {
    return this.inHost(ref, (host, doc) => this.left(host, ref, doc, peer));
  }

  /**
   * The connection listener the document registry tells (inside the actor's mailbox) when a sync connection joins
   * or leaves: the user's presence follows its connections, and a joining client that takes extension frames gets
   * the complete annotation and presence lists first.
   */
  connectionListener(): ConnectionListener {
    const failed = (error: unknown): void => this.deps.log.error('presence of a sync connection failed', { error });
    return {
      joined: (peer, actor) => {
        actor.run(() => this.inState(actor, actor.key, (doc) => void this.joined(actor, actor.key, doc, peer, actor).catch(failed))).catch(failed);
      },
      left: (peer, actor) => {
        actor.run(() => this.inState(actor, actor.key, (doc) => void this.left(actor, actor.key, doc, peer).catch(failed))).catch(failed);
      },
    };
  }

  /** Stops expiry timers (server stop); they are not unref'd, so an expiry due still happens in a live process. */
  close(): void {
    for (const key of [...this.armed.keys()]) this.disarm(key);
  }

  /**
   * DocumentDataOwner (register after the document registry): the registry's eviction closes connections, and their
   * presence going offline is written while the actor drains, so the ranges are removed once that is done.
   */
  deleteDocumentData(ref: DocumentKey): Promise<void> {
    return this.removeData([ref.apiKey, ref.organizationId, ref.documentId]);
  }

  deleteOrganizationData(apiKey: string, organizationId: string): Promise<void> {
    return this.removeData([apiKey, organizationId]);
  }

  private async removeData(prefix: readonly string[]): Promise<void> {
    if (prefix.length === 3) {
      // One document: its timer by key, not a walk of every armed document (every tenant's) per deleted document.
      const [apiKey, organizationId, documentId] = prefix as [string, string, string];
      this.disarm(documentKeyString({ apiKey, organizationId, documentId }));
    } else {
      const within = (ref: DocumentKey): boolean => [ref.apiKey, ref.organizationId, ref.documentId].slice(0, prefix.length).every((part, i) => part === prefix[i]);
      for (const [key, { ref }] of [...this.armed]) if (within(ref)) this.disarm(key);
    }
    const { store } = this.deps;
    // Writes of the drained actors may still be in the group commit; removed before they land, they would come back.
    await store.group.barrier();
    // In batches of bounded transactions (src/store/chunked-scan.ts): an organization may hold millions of threads.
    // A thread's index row goes with it; an organization's index range is under its prefix.
    await removeRangeInBatches(store, [...threadRanges(store, prefix), store.records<unknown>(DB.presence)], prefix);
  }

  /** Runs a presence-changing task in the document's mailbox; resolves with the change once committed. */
  private inHost(ref: DocumentKey, change: (host: DocumentActorView, doc: Loaded) => Promise<LivePresenceChange>): Promise<LivePresenceChange> {
    return this.deps.actors.use(ref, async (host) => {
      const staged = await host.run(() => this.inState(host, ref, (doc) => ({ result: change(host, doc) })));
      return staged.result;
    });
  }

  private changePresence(host: DocumentActorView, ref: DocumentKey, doc: Loaded, change: (state: PresenceState) => Promise<LivePresenceChange>): Promise<LivePresenceChange> {
    const result = change(doc.presence);
    this.arm(host, ref, doc);
    return result;
  }

  private joined(host: DocumentActorView, ref: DocumentKey, doc: Loaded, peer: ConnectionPeer, actor?: DocumentActorView): Promise<LivePresenceChange> {
    if (peer.extensions) {
      doc.listeners++;
      if (actor !== undefined) this.sendSnapshot(actor, doc, peer.sessionId, 1);
    }
    const user = { userId: peer.userId, ...(peer.name === undefined ? {} : { name: peer.name }), ...(peer.email === undefined ? {} : { email: peer.email }) };
    return this.changePresence(host, ref, doc, (state) => state.connect(peer.sessionId, user));
  }

  private left(host: DocumentActorView, ref: DocumentKey, doc: Loaded, peer: ConnectionPeer): Promise<LivePresenceChange> {
    if (peer.extensions) doc.listeners--;
    return this.changePresence(host, ref, doc, (state) => state.disconnect(peer.sessionId));
  }

  /** The complete lists, built now inside the mailbox and sent to the joining socket once all they hold has committed. */
  private sendSnapshot(actor: DocumentActorView, doc: Loaded, sessionId: string, attempt: number): void {
    const bytes = this.deps.encode({
      organizationId: actor.key.organizationId,
      documentId: actor.key.documentId,
      snapshot: true,
      annotations: [...doc.annotations.all()].map((record) => ({ op: 'upsert', annotation: doc.annotations.view(record) })),
      presence: { users: doc.presence.list(), removed: [] },
    });
    doc.writes.afterPending((ok) => {
      if (ok) actor.sendTo(sessionId, bytes);
      // Something it held failed and memory was put back: build it again from memory as it now is.
      else if (attempt < ATTEMPTS) actor.run(() => this.sendSnapshot(actor, doc, sessionId, attempt + 1)).catch((error: unknown) => this.deps.log.error('join snapshot failed', { error }));
      else this.deps.log.warn('join snapshot not sent: recent changes failed to commit', { documentId: actor.key.documentId });
    });
  }

  /** Runs `use` with the host's state: at once when loaded (the mailbox goes straight on), else after the first load. */
  private inState<R>(host: DocumentActorView, ref: DocumentKey, use: (doc: Loaded) => R): R | Promise<R> {
    const doc = this.loaded.get(host);
    if (doc !== undefined && !(doc instanceof Promise)) return use(doc);
    return (doc ?? this.load(host, ref)).then(use);
  }

  private load(host: DocumentActorView, ref: DocumentKey): Promise<Loaded> {
    const loading = (async (): Promise<Loaded> => {
      // The document may have been unloaded a moment ago with writes still in the group commit: read after they land.
      const key = documentKeyString(ref);
      const earlier = this.writesOf.get(key);
      if (earlier !== undefined && earlier.pending > 0) await new Promise<boolean>((resolve) => earlier.afterPending(resolve));
      const doc = new Loaded(this, host, ref, this.deps);
      this.writesOf.set(key, doc.writes);
      doc.annotations = AnnotationState.load(doc, ref);
      doc.presence = await PresenceState.load(doc, ref);
      this.loaded.set(host, doc);
      this.arm(host, ref, doc);
      return doc;
    })();
    this.loaded.set(host, loading);
    loading.catch(() => {
      if (this.loaded.get(host) === loading) this.loaded.delete(host);
    });
    return loading;
  }

  /** Adds a listener for committed annotation changes, in commit order; it must not throw or block. */
  onAnnotationsCommitted(listener: (ref: DocumentKey, changes: readonly LiveAnnotationChange[]) => void): void {
    this.committedListeners.push(listener);
  }

  /** @internal For Loaded: called once a change has committed, in commit order. */
  publish(host: DocumentActorView, ref: DocumentKey, doc: Loaded, annotations: readonly LiveAnnotationChange[], presence: LivePresenceChange): void {
    if (annotations.length > 0) for (const listener of this.committedListeners) listener(ref, annotations);
    // No socket takes live messages: none is built (the REST hot path pays nothing for the feature).
    if (doc.listeners <= 0) return;
    if (annotations.length === 0 && presence.users.length === 0 && presence.removed.length === 0) return;
    // A plain copy of `presence`: it may be a change object whose `users` is a getter, which JSON would not see.
    const { users, removed } = presence;
    host.broadcast(this.deps.encode({ organizationId: ref.organizationId, documentId: ref.documentId, snapshot: false, annotations, presence: { users, removed } }));
  }

  /** One timer per document, set for the earliest offline user's expiry; it runs the expiry in the host's mailbox. */
  private arm(host: DocumentActorView, ref: DocumentKey, doc: Loaded): void {
    const at = doc.presence.nextExpiry();
    if (at === doc.timerAt) return;
    const key = documentKeyString(ref);
    this.disarm(key);
    if (at === undefined) return;
    doc.timerAt = at;
    doc.timer = setTimeout(() => {
      this.armed.delete(key);
      doc.timer = undefined;
      doc.timerAt = undefined;
      host
        .run(() => {
          const expired = doc.presence.expire();
          this.arm(host, ref, doc);
          return { expired };
        })
        .then(({ expired }) => expired)
        .catch((error: unknown) => this.deps.log.warn('presence expiry failed', { error, documentId: ref.documentId }));
    }, Math.max(0, at - this.deps.now()));
    this.armed.set(key, { ref, doc });
  }

  private disarm(key: string): void {
    const armed = this.armed.get(key);
    if (armed === undefined) return;
    this.armed.delete(key);
    clearTimeout(armed.doc.timer);
    armed.doc.timer = undefined;
    armed.doc.timerAt = undefined;
  }
}

/** undefined when nothing is pending (the common case: no promise is made), else whether it all committed. */
function whenCommitted(writes: DocumentWrites): Promise<boolean> | undefined {
  if (writes.pending === 0) return undefined;
  return new Promise((resolve) => writes.afterPending(resolve));
}
