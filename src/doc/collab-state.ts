// Owns per-document comment and presence state behind a host seam: loaded once per host, run serially, changes published.
import type { Logger } from '../log.js';
import { atomically, type Outbox } from '../events/outbox.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { DocumentRef } from './annotations/model.js';
import { AnnotationState, type LiveAnnotationChange, type Mutation } from './annotations/state.js';
import { PresenceState, type LivePresenceChange, type PresenceView } from './presence.js';

/**
 * What the state needs from whoever owns a document (its DocumentActor): serial execution and a way to reach
 * every socket of the document. The state lives as long as its host object.
 */
export interface DocumentHost {
  run<T>(task: () => T | Promise<T>): Promise<T>;
  broadcast(bytes: Uint8Array): unknown;
}

/** Loads the document's host and keeps it loaded while `use` runs (DocumentRegistry.use). */
export interface DocumentHosts {
  use<T>(ref: DocumentRef, use: (host: DocumentHost) => Promise<T>): Promise<T>;
}

/** The body of the live WebSocket message (docs/comments-and-presence.md). */
export interface LiveMessage {
  readonly organizationId: string;
  readonly documentId: string;
  /** true: `annotations` and `presence.users` are the complete current lists (sent on join), not changes. */
  readonly snapshot: boolean;
  readonly annotations: readonly LiveAnnotationChange[];
  readonly presence: LivePresenceChange;
}

/** A sync connection as the registry's connection listeners see it (structurally src/doc/peer.ts PeerInfo). */
export interface ConnectionPeer {
  readonly sessionId: string;
  readonly userId: string;
  readonly name?: string | undefined;
  readonly email?: string | undefined;
  readonly extensions: boolean;
}

/** The actor as a connection listener sees it (structurally DocumentActorView). */
export interface ListenedActor extends DocumentHost {
  readonly key: DocumentRef;
  sendTo(sessionId: string, bytes: Uint8Array): boolean;
}

/** Structurally the registry's ConnectionListener. */
export interface ConnectionEvents {
  joined(peer: ConnectionPeer, actor: ListenedActor): void;
  left(peer: ConnectionPeer, actor: ListenedActor): void;
}

export interface CollabDeps {
  readonly store: Store;
  readonly outbox: Outbox;
  readonly now: () => number;
  readonly offlineTtlMs: number;
  readonly hosts: DocumentHosts;
  readonly encode: (message: LiveMessage) => Uint8Array;
  readonly log: Logger;
}

export interface CollabDocument {
  readonly annotations: AnnotationState;
  readonly presence: PresenceState;
}

interface Loaded extends CollabDocument {
  timer?: NodeJS.Timeout;
}

const NO_PRESENCE: LivePresenceChange = { users: [], removed: [] };
/** ordered-binary's MAXIMUM_KEY: as the last key element it sorts after every id under the prefix. */
const KEY_END = new Uint8Array([0xff]);

export class CollabDocuments {
  private readonly loaded = new WeakMap<DocumentHost, Promise<Loaded>>();
  /** Armed expiry timers and the document each belongs to. */
  private readonly timers = new Map<NodeJS.Timeout, DocumentRef>();

  constructor(private readonly deps: CollabDeps) {}

  /** Runs `task` in the document's host with its state loaded; reads and writes go through here. */
  read<T>(ref: DocumentRef, task: (doc: CollabDocument) => T): Promise<T> {
    return this.deps.hosts.use(ref, (host) => host.run(async () => task(await this.state(host, ref))));
  }

  /** Runs an annotation change and publishes what it changed to the document's sockets, in mailbox order. */
  annotations<T>(ref: DocumentRef, change: (state: AnnotationState) => Promise<Mutation<T>>): Promise<T> {
    return this.deps.hosts.use(ref, (host) =>
      host.run(async () => {
        const doc = await this.state(host, ref);
        const result = await change(doc.annotations);
        this.publish(host, ref, result.live, NO_PRESENCE);
        return result.data;
      }),
    );
  }

  /** Runs a presence change, publishes it and re-arms the offline expiry timer. */
  presence(ref: DocumentRef, change: (state: PresenceState) => Promise<LivePresenceChange>): Promise<PresenceView[]> {
    return this.deps.hosts.use(ref, (host) => host.run(() => this.changePresence(host, ref, change)));
  }

  /** Inside the host's mailbox: applies a presence change, publishes it and re-arms the expiry timer. */
  private async changePresence(host: DocumentHost, ref: DocumentRef, change: (state: PresenceState) => Promise<LivePresenceChange>): Promise<PresenceView[]> {
    const doc = await this.state(host, ref);
    const live = await change(doc.presence);
    this.publish(host, ref, [], live);
    this.arm(host, ref, doc);
    return live.users;
  }

  /** A user's sync connection opened / closed, for callers outside the document's mailbox. */
  connect(ref: DocumentRef, connectionId: string, user: { userId: string; name?: string; email?: string }): Promise<PresenceView[]> {
    return this.presence(ref, (state) => state.connect(connectionId, user));
  }

  disconnect(ref: DocumentRef, connectionId: string): Promise<PresenceView[]> {
    return this.presence(ref, (state) => state.disconnect(connectionId));
  }

  /**
   * The connection listener the document registry tells (inside the actor's mailbox) when a sync connection joins
   * or leaves: the user's presence follows its connections, and a joining client that takes extension frames gets
   * the complete annotation and presence lists first.
   */
  connectionListener(): ConnectionEvents {
    const failed = (error: unknown): void => this.deps.log.error('presence of a sync connection failed', { error });
    return {
      joined: (peer, actor) => {
        const user = { userId: peer.userId, ...(peer.name === undefined ? {} : { name: peer.name }), ...(peer.email === undefined ? {} : { email: peer.email }) };
        actor
          .run(async () => {
            if (peer.extensions) actor.sendTo(peer.sessionId, await this.snapshot(actor, actor.key));
            await this.changePresence(actor, actor.key, (state) => state.connect(peer.sessionId, user));
          })
          .catch(failed);
      },
      left: (peer, actor) => {
        actor.run(() => this.changePresence(actor, actor.key, (state) => state.disconnect(peer.sessionId))).catch(failed);
      },
    };
  }

  /** The complete lists as one live message, for a socket that just joined. Call from inside the host's mailbox. */
  async snapshot(host: DocumentHost, ref: DocumentRef): Promise<Uint8Array> {
    const doc = await this.state(host, ref);
    return this.deps.encode({
      organizationId: ref.organizationId,
      documentId: ref.documentId,
      snapshot: true,
      annotations: [...doc.annotations.all()].map((record) => ({ op: 'upsert', annotation: doc.annotations.view(record) })),
      presence: { users: doc.presence.list(), removed: [] },
    });
  }

  /** Stops expiry timers (server stop); they are not unref'd, so an expiry due still happens in a live process. */
  close(): void {
    for (const timer of this.timers.keys()) clearTimeout(timer);
    this.timers.clear();
  }

  /**
   * DocumentDataOwner (register after the document registry): the registry's eviction closes connections, and their
   * presence going offline is written while the actor drains, so the ranges are removed once that is done.
   */
  deleteDocumentData(ref: DocumentRef): Promise<void> {
    return this.removeData([ref.apiKey, ref.organizationId, ref.documentId]);
  }

  deleteOrganizationData(apiKey: string, organizationId: string): Promise<void> {
    return this.removeData([apiKey, organizationId]);
  }

  private async removeData(prefix: readonly string[]): Promise<void> {
    const within = (ref: DocumentRef): boolean => [ref.apiKey, ref.organizationId, ref.documentId].slice(0, prefix.length).every((part, i) => part === prefix[i]);
    for (const [timer, ref] of this.timers) {
      if (!within(ref)) continue;
      clearTimeout(timer);
      this.timers.delete(timer);
    }
    const { store } = this.deps;
    const databases = [store.records<unknown>(DB.annotations), store.records<unknown>(DB.presence)];
    await atomically(store, () => {
      for (const db of databases) {
        for (const key of Array.from(db.getKeys({ start: [...prefix], end: [...prefix, KEY_END] }))) db.removeSync(key);
      }
    });
  }

  /** Loads once per host; concurrent first callers share the promise. */
  private state(host: DocumentHost, ref: DocumentRef): Promise<Loaded> {
    let loading = this.loaded.get(host);
    if (loading === undefined) {
      loading = this.load(host, ref);
      this.loaded.set(host, loading);
      loading.catch(() => this.loaded.delete(host));
    }
    return loading;
  }

  private async load(host: DocumentHost, ref: DocumentRef): Promise<Loaded> {
    const { store, outbox, now, offlineTtlMs } = this.deps;
    const annotations = AnnotationState.load({ store, outbox, now }, ref);
    const presence = await PresenceState.load({ store, now, offlineTtlMs }, ref);
    const doc: Loaded = { annotations, presence };
    this.arm(host, ref, doc);
    return doc;
  }

  private publish(host: DocumentHost, ref: DocumentRef, annotations: readonly LiveAnnotationChange[], presence: LivePresenceChange): void {
    if (annotations.length === 0 && presence.users.length === 0 && presence.removed.length === 0) return;
    host.broadcast(this.deps.encode({ organizationId: ref.organizationId, documentId: ref.documentId, snapshot: false, annotations, presence }));
  }

  /** One timer per document, set for the earliest offline user's expiry; it runs the expiry in the host's mailbox. */
  private arm(host: DocumentHost, ref: DocumentRef, doc: Loaded): void {
    if (doc.timer !== undefined) {
      clearTimeout(doc.timer);
      this.timers.delete(doc.timer);
      delete doc.timer;
    }
    const at = doc.presence.nextExpiry();
    if (at === undefined) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (doc.timer === timer) delete doc.timer;
      host
        .run(async () => {
          this.publish(host, ref, [], await doc.presence.expire());
          this.arm(host, ref, doc);
        })
        .catch((error: unknown) => this.deps.log.warn('presence expiry failed', { error, documentId: ref.documentId }));
    }, Math.max(0, at - this.deps.now()));
    doc.timer = timer;
    this.timers.set(timer, ref);
  }
}
