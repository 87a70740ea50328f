// Owns which document actors are loaded: load once per key, leases, idle unload with a final snapshot, graceful stop.
import type { Config } from '../config.js';
import { CLOSE, unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { UpdateLog } from '../store/update-log.js';
import { DocumentActor } from './actor.js';
import { makeActorDeps, type ActorConfig, type ActorDeps } from './actor-deps.js';
import { JoinFrames } from './join-state.js';
import { HeldBytes } from './held-bytes.js';
import { IdleTimers, type IdleTimed } from './idle-timers.js';
import { LoadedBudget, type LoadedLimits } from './loaded-budget.js';
import { ActorLease, type Lease } from './lease.js';
import { type ConnectionListener, type TopicPublisher } from './peer.js';
import { documentKeyString, type DocumentKey } from '../document-key.js';
import { claimAll, NotOwnerError, SINGLE_PROCESS, type DocumentOwnership } from './ownership.js';
import { DELETED, DocumentHolds, documentDeleted, inOrganizations, type HoldScope } from './document-holds.js';

export type RegistryConfig = Pick<Config, 'persistence' | 'groupCommitMs' | 'compactAfterUpdates' | 'compactAfterBytes' | 'docIdleUnloadMs'> &
  ActorConfig &
  LoadedLimits &
  Partial<Pick<Config, 'joinStateCacheBytes'>>;

interface Entry extends IdleTimed {
  readonly key: DocumentKey;
  /** The first load; dropped once it has settled (`actor` holds the result), so a loaded document keeps no promise. */
  loading?: Promise<DocumentActor> | undefined;
  actor?: DocumentActor | undefined;
  unloading?: Promise<void> | undefined;
  /** The actor's stored bytes when last looked at (at each lease, when it went idle, at a scrape): the budget's estimate. */
  bytes: number;
}

export class DocumentActors {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners: ConnectionListener[] = [];
  private readonly unloadListeners: Array<(key: DocumentKey) => void> = [];
  /** What the budget counts of each loaded document. */
  private readonly held = new HeldBytes();
  private closing = false;
  /** Documents being re-keyed (exclusively) or deleted (whileDeleting): acquirers wait until the work is done. */
  readonly holds = new DocumentHolds();
  readonly updateLog: UpdateLog;
  /** Late-join frames kept over every loaded document, within JOIN_STATE_CACHE_BYTES. */
  readonly joinFrames: JoinFrames;
  /** One for every actor: a deps object and onIdle closure per document cost ~0.5 KB each. */
  private readonly actorDeps: ActorDeps;
  /** Loaded documents against MAX_LOADED_DOCUMENTS[_PER_KEY] and their bytes: who is unloaded early, and the 429. */
  private readonly budget: LoadedBudget<Entry>;
  private readonly idleTimers: IdleTimers<Entry>;

  /** `publisher` reaches a topic's subscribers (uWS app.publish in src/server.ts). */
  constructor(
    config: RegistryConfig,
    store: Store,
    private readonly log: Logger,
    publisher: TopicPublisher,
    private readonly ownership: DocumentOwnership = SINGLE_PROCESS,
    crdtEvents?: ActorDeps['crdtEvents'],
  ) {
    ownership.onLost((key) => void this.drop(key));
    this.updateLog = new UpdateLog(config.persistence ? store : null, config, log);
    this.joinFrames = new JoinFrames(config.joinStateCacheBytes ?? 0);
    this.actorDeps = makeActorDeps(config, {
      updateLog: this.updateLog,
      log,
      onIdle: (key) => this.scheduleUnload(documentKeyString(key)),
      listeners: this.listeners,
      publisher,
      ...(crdtEvents === undefined ? { joinFrames: this.joinFrames } : { joinFrames: this.joinFrames, crdtEvents }),
    });
    this.idleTimers = new IdleTimers<Entry>(config.docIdleUnloadMs, (id, entry) => this.unload(id, entry), (entry) => entry.actor?.idle === true);
    this.budget = new LoadedBudget<Entry>(config, {
      // No connection, no lease, nothing queued, loaded and staying.
      unloadable: ({ key, actor, loading, unloading }) =>
        actor !== undefined && loading === undefined && unloading === undefined && !this.closing && actor.idle && actor.queued === 0 && this.holds.of(key) === undefined,
      inUse: (entry) => entry.actor !== undefined && !entry.actor.idle,
      // The same path as the idle unload; out of the budget in any case, so the budget's loops always end.
      unload: (entry) => (this.unload(documentKeyString(entry.key), entry), this.budget.remove(entry)),
    });
  }

  /** The scale-out seam: whether this process owns `key` (always, unless a cluster's ownership says otherwise). */
  owns(key: DocumentKey): boolean {
    return this.ownership.owns(key);
  }

  get loadedCount(): number {
    return this.entries.size;
  }

  /** Loaded documents, their connections, queued mailbox work and stored bytes, summed when metrics are scraped. */
  stats(): { loaded: number; connections: number; mailboxDepth: number; mailboxMax: number; joinStateBytes: number; loadedBytes: number } {
    let connections = 0;
    let mailboxDepth = 0;
    let mailboxMax = 0;
    for (const entry of this.entries.values()) {
      const actor = entry.actor;
      if (actor === undefined) continue;
      // Connected documents grow through sync between the budget's looks (leases, going idle): the gauge reads them now.
      this.budget.resize(entry, this.held.of(actor));
      connections += actor.connectionCount;
      mailboxDepth += actor.queued;
      mailboxMax = Math.max(mailboxMax, actor.queued);
    }
    return { loaded: this.entries.size, connections, mailboxDepth, mailboxMax, joinStateBytes: this.joinFrames.bytes, loadedBytes: this.budget.bytes };
  }

  /** Registers a listener told (inside the mailbox) when a connection joins or leaves any document. */
  onConnection(listener: ConnectionListener): void {
    this.listeners.push(listener);
  }

  /** Registers a listener told after an idle actor wrote its final snapshot and was unloaded. */
  onUnloaded(listener: (key: DocumentKey) => void): void {
    this.unloadListeners.push(listener);
  }

  /** Adds what a module holds beside each actor to the bytes the loaded-documents budget counts for it. */
  measureBeside(measure: (actor: DocumentActor) => number): void {
    this.held.add(measure);
  }

  /** A loaded actor without loading or leasing it (undefined when not loaded); do not keep it across awaits. */
  peek(key: DocumentKey): DocumentActor | undefined {
    const entry = this.entries.get(documentKeyString(key));
    return entry?.unloading === undefined ? entry?.actor : undefined;
  }

  /**
   * Whether acquire(key) can finish without waiting on I/O: this process owns the document and it is neither being
   * unloaded nor re-keyed (a load itself runs in the microtasks of the caller). The sync edge asks before an upgrade.
   */
  leasableNow(key: DocumentKey): boolean {
    const id = documentKeyString(key);
    return this.ownership.owns(key) && this.holds.of(key, id) === undefined && this.entries.get(id)?.unloading === undefined;
  }

  /** Loads the actor if needed (concurrent first callers share one load) and leases it. */
  acquire(key: DocumentKey): Promise<Lease> {
    return this.acquireAs(key, false);
  }

  /**
   * `admitted`: a request's load, which passes the key's budget or is refused (a sync connection's never is). A held
   * document is waited for before its lease is claimed; a sync connection that waited on a delete is refused with
   * NOT_FOUND (closed 4404, as those open when it began), a request goes on with the document as the delete left it.
   */
  private async acquireAs(key: DocumentKey, admitted: boolean): Promise<Lease> {
    const id = documentKeyString(key);
    let claimed = false;
    for (;;) {
      if (this.closing) throw unavailable('the server is shutting down; reconnect shortly');
      const hold = this.holds.of(key, id);
      if (hold !== undefined) {
        if ((await this.holds.wait(key, hold)) === 'deleted' && !admitted) throw documentDeleted();
        continue;
      }
      if (!this.ownership.owns(key)) {
        const claim = await this.ownership.claim(key);
        if (!claim.mine) throw new NotOwnerError(claim.owner);
        claimed = true;
        continue;
      }
      const entry = this.entries.get(id) ?? this.load(id, key, admitted && { claimed });
      if (entry.unloading !== undefined) {
        await entry.unloading;
        continue;
      }
      const actor = await (entry.loading ?? entry.actor);
      // An unload may have started while this caller waited for the load to finish; then load again.
      if (actor === undefined || entry.unloading !== undefined || this.entries.get(id) !== entry) continue;
      return this.leaseOf(entry, actor);
    }
  }

  /** Runs `use` with a leased actor and releases it afterwards (also the `DocumentActorLoader` port of src/doc/peer.ts). */
  async use<T>(key: DocumentKey, use: (actor: DocumentActor) => Promise<T> | T): Promise<T> {
    // Every REST operation on a document comes here: a loaded document is leased without acquire's awaits.
    const lease = this.leaseNow(key) ?? (await this.acquireAs(key, true));
    try {
      return await use(lease.actor);
    } finally {
      lease.release();
    }
  }

  /** A lease taken at once, when this process owns the document and it is loaded and neither held nor unloading. */
  private leaseNow(key: DocumentKey): Lease | undefined {
    if (this.closing || !this.ownership.owns(key)) return undefined;
    const id = documentKeyString(key);
    if (this.holds.of(key, id) !== undefined) return undefined;
    const entry = this.entries.get(id);
    if (entry === undefined || entry.actor === undefined || entry.loading !== undefined || entry.unloading !== undefined) return undefined;
    return this.leaseOf(entry, entry.actor);
  }

  /** Leases a loaded entry's actor: a leased document is not unloaded (its idle timer, if armed, finds it busy). */
  private leaseOf(entry: Entry, actor: DocumentActor): Lease {
    // What its last use added is counted here (an idle document's at once, in scheduleUnload).
    this.budget.resize(entry, this.held.of(actor));
    this.budget.touch(entry);
    const lease = new ActorLease(actor);
    // Leased, this document is not one the budget may unload; a new one may have put the budget over.
    this.budget.enforce(entry.key.apiKey);
    return lease;
  }

  /** `admitted`: a request's load (acquireAs); refused, it leaves nothing behind, not even the cluster lease it claimed. */
  private load(id: string, key: DocumentKey, admitted: false | { readonly claimed: boolean }): Entry {
    if (admitted !== false) {
      try {
        this.budget.admit(key.apiKey);
      } catch (error) {
        if (admitted.claimed) this.ownership.release(key);
        throw error;
      }
    }
    const loading = Promise.resolve().then(() => {
      const loaded = this.updateLog.snapshots.load(key.apiKey, key.organizationId, key.documentId);
      const actor = new DocumentActor(key, loaded, this.actorDeps);
      entry.actor = actor;
      entry.loading = undefined;
      return actor;
    });
    const entry: Entry = { key, loading, bytes: 0, idleAt: 0 };
    this.entries.set(id, entry);
    // Counted from the start of its load, so concurrent loads of one key cannot all pass its share.
    this.budget.add(entry);
    loading.catch((error: unknown) => {
      this.log.error('document load failed', { error, organizationId: key.organizationId, documentId: key.documentId });
      this.budget.remove(entry);
      entry.loading = undefined;
      if (this.entries.get(id) === entry) this.entries.delete(id);
    });
    return entry;
  }

  private scheduleUnload(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined || this.closing || entry.unloading !== undefined) return;
    // Idle now: what a connection added is counted, and the budget may take this or another document at once.
    if (entry.actor !== undefined) this.budget.resize(entry, this.held.of(entry.actor));
    this.budget.enforce(entry.key.apiKey);
    if (entry.unloading !== undefined) return;
    this.idleTimers.wentIdle(id, entry);
  }

  private unload(id: string, entry: Entry): void {
    this.idleTimers.stop(entry);
    const actor = entry.actor;
    if (actor === undefined || !actor.idle || entry.unloading !== undefined || this.closing) return;
    this.budget.remove(entry);
    entry.unloading = (async () => {
      await actor.whenIdle();
      await actor.finalSnapshot();
      actor.dispose();
      this.entries.delete(id);
      this.ownership.release(entry.key);
      for (const listener of this.unloadListeners) listener(entry.key);
    })().catch((error: unknown) => {
      // The state is still only in memory: keep the actor so nothing is lost, and try again later.
      this.log.error('final snapshot failed; the document stays loaded', { error });
      entry.unloading = undefined;
      this.budget.add(entry);
      this.scheduleUnload(id);
    });
  }

  /**
   * Ownership was lost (a cluster lease lapsed): another node may own the document now, so this one stops at once,
   * without a final snapshot or compaction that could race the new owner's writes. Connections are closed with
   * SERVICE_RESTART (clients reconnect, to the new owner or through a relay); updates already queued are appended.
   */
  private async drop(key: DocumentKey): Promise<void> {
    const id = documentKeyString(key);
    const entry = this.entries.get(id);
    if (entry === undefined || entry.unloading !== undefined) return;
    await this.takeDown(id, entry, CLOSE.SERVICE_RESTART, 'the document moved to another node', () => this.updateLog.flush()).catch((error: unknown) =>
      this.log.error('dropping a document whose lease was lost failed', { error }),
    );
  }

  /**
   * Closes a document's connections with `code`, drains its mailbox, lets `keep` write what must be kept (no `keep`: it is
   * deleted, its pending crdt events dropped too), disposes it and forgets it (the unload listeners are told). A load in
   * flight is finished first; its failure rejects here, as for the callers waiting on it (the entry is already gone then).
   */
  private takeDown(id: string, entry: Entry, code: number, reason: string, keep?: (actor: DocumentActor) => Promise<void>): Promise<void> {
    this.idleTimers.stop(entry);
    this.budget.remove(entry);
    entry.unloading = (async () => {
      const actor = entry.actor ?? (await entry.loading);
      if (actor !== undefined) {
        actor.closeAll(code, reason);
        await actor.whenIdle();
        if (keep !== undefined) await keep(actor);
        actor.dispose(keep === undefined);
      }
      this.entries.delete(id);
      for (const listener of this.unloadListeners) listener(entry.key);
    })();
    return entry.unloading;
  }

  /** DocumentDataOwner (src/tenant/directory): its actor goes without a snapshot (by key: not a walk of every entry). */
  deleteDocumentData(ref: DocumentKey): Promise<void> {
    return this.evict([ref], [ref.apiKey, ref.organizationId, ref.documentId]);
  }

  /** DocumentDataOwner: every document of the organization, loaded or not. */
  deleteOrganizationData(apiKey: string, organizationId: string): Promise<void> {
    return this.evict(inOrganizations(this.entries.values(), [{ apiKey, organizationId }]), [apiKey, organizationId]);
  }

  /**
   * DocumentDataOwner: runs a whole delete (every owner, then the directory entries) with its documents held, loaded
   * ones taken down first (what they were writing lands before any owner removes rows), their leases kept: nothing
   * loads a half-removed document here or elsewhere until it is done (docs/directory.md, "A write racing a delete").
   */
  whileDeleting<T>(scope: HoldScope, work: () => Promise<T>): Promise<T> {
    const keys = [...(scope.documents ?? [])];
    const held = async (): Promise<T> => {
      keys.push(...inOrganizations(this.entries.values(), scope.organizations));
      await Promise.all(keys.map((key) => this.unloadNow(documentKeyString(key), CLOSE.DOCUMENT_DELETED, DELETED)));
      return work();
    };
    return this.holds.run('delete', scope, held, () => this.releaseUnloaded(keys));
  }

  /**
   * Closes the documents' connections (4404), drains and drops them without a final snapshot (nothing writes the data
   * back), removes their stores under `prefix`. As at an idle unload, the unload listeners are told and the ownership
   * released: else the collab layer's writes entry and a cluster lease stayed for good per deleted document.
   */
  private async evict(keys: readonly DocumentKey[], prefix: readonly string[]): Promise<void> {
    try {
      await Promise.all(keys.map((key) => this.unloadNow(documentKeyString(key), CLOSE.DOCUMENT_DELETED, DELETED)));
      await this.updateLog.removeAll(prefix);
    } finally {
      // Once the rows are gone; inside a delete's hold, at its end (another node must not serve it meanwhile).
      this.releaseUnloaded(keys.filter((key) => this.holds.of(key) === undefined));
    }
  }

  /**
   * Runs `work` with the documents unloaded and held: their connections are closed with `code`, their mailboxes
   * drained, final snapshots written and the update log flushed, so everything is in LMDB; no load starts until
   * `work` is done (callers wait, then load what `work` left). Document migration re-keys data this way.
   */
  exclusively<T>(keys: readonly DocumentKey[], code: number, reason: string, work: () => Promise<T>): Promise<T> {
    const unloaded = async (): Promise<T> => {
      // A cluster: the work needs every document's lease (NotOwnerError before anything was unloaded or written here).
      await claimAll(this.ownership, keys);
      await Promise.all(keys.map((key) => this.unloadNow(documentKeyString(key), code, reason, (actor) => actor.finalSnapshot())));
      await this.updateLog.flush();
      return work();
    };
    return this.holds.run('migration', { documents: keys }, unloaded, () => this.releaseUnloaded(keys));
  }

  /** Unloaded (or never loaded) documents give their lease up, so the node that needs them next takes them at once. */
  private releaseUnloaded(keys: readonly DocumentKey[]): void {
    // Before the holds go, so no acquirer waiting on them loads a document whose lease is being released.
    for (const key of keys) if (!this.entries.has(documentKeyString(key)) && this.ownership.owns(key)) this.ownership.release(key);
  }

  /** Takes the document down once an unload under way is done (`keep`: what it writes first; none: it is deleted). */
  private async unloadNow(id: string, code: number, reason: string, keep?: (actor: DocumentActor) => Promise<void>): Promise<void> {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    if (entry.unloading !== undefined) {
      // An idle unload or an eviction is under way; once it is done the document may be loaded again only by us.
      // Its failure (a failed load) is reported to the callers that started it; here only its end matters.
      await entry.unloading.catch(() => undefined);
      return this.unloadNow(id, code, reason, keep);
    }
    await this.takeDown(id, entry, code, reason, keep);
  }

  /** Graceful stop: close every connection with SERVICE_RESTART, drain mailboxes, final snapshots, flush. */
  async shutdown(): Promise<void> {
    this.closing = true;
    const entries = [...this.entries.values()];
    for (const entry of entries) this.idleTimers.stop(entry);
    await Promise.all(entries.map((entry) => entry.unloading));
    // Loads still in flight finish first, so their actors are closed and snapshotted too.
    await Promise.allSettled(entries.map((entry) => entry.loading));
    const actors = entries.flatMap((entry) => (entry.actor === undefined || !this.entries.has(documentKeyString(entry.key)) ? [] : [entry.actor]));
    for (const actor of actors) actor.closeAll(CLOSE.SERVICE_RESTART, 'server restarting');
    await Promise.all(actors.map((actor) => actor.whenIdle()));
    await Promise.all(actors.map((actor) => actor.finalSnapshot()));
    await this.updateLog.flush();
    for (const actor of actors) actor.dispose();
    // Everything is in the store now: hand each document over (a cluster lease is released, so the node its clients
    // reconnect to takes it at once instead of waiting for the lease to lapse).
    for (const actor of actors) this.ownership.release(actor.key);
    this.entries.clear();
  }
}
