// Owns the `crdt.update_data` event of each Yjs store (upstream notes 3.1, 3.2): debounced per store, raised into the outbox when a delivery channel wants it.
import type { DocumentKey } from '../document-key.js';
import type { Outbox } from '../events/outbox.js';
import { eventMetadata, type EventPayload } from '../events/types.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import type { CrdtRecord, EditorDoc } from './editor-doc.js';

/** Upstream's debounce: the event goes once a store has had no change for this long. */
export const CRDT_EVENT_QUIET_MS = 5000;
/** A store changed without a pause still raises one this long after its first unreported change. */
export const CRDT_EVENT_MAX_WAIT_MS = 30_000;
/** Above this much JSON the event carries `data: null` (read it with `/v2/crdt/get`): an event is a row and a webhook body. */
export const CRDT_EVENT_MAX_DATA_BYTES = 256 * 1024;
/** How often pending stores are looked at: an event goes 5–6 s after the last change. */
const TICK_MS = 1000;

/** `data` of a `crdt.update_data` event: upstream's CRDTPayload (`crdtData` as `/v2/crdt/get` answers a store). */
export interface CrdtPayload extends EventPayload {
  readonly crdtData: CrdtRecord;
  readonly actionUser: { readonly userId: string };
}

/** Narrows an outbox event's `data` (a delivery channel reads it after checking the type). */
export function crdtData(data: EventPayload): CrdtPayload {
  return data as CrdtPayload;
}

interface Pending {
  readonly key: DocumentKey;
  /** When its first unreported change was seen. */
  readonly since: number;
}

/**
 * The actors' port (ActorDeps.crdtEvents). A change asks the outbox whether anything wants the event unless its store
 * has one pending (the audience's kept answer: 34–60 ns, bench/README.md "Twenty-fourth session: what the
 * crdt.update_data check costs the sync path"); nothing is kept for a store no channel wants it for. An event is
 * raised in a transaction of its own when due, so the 5 s before it are not durable: a crash then loses the event (not
 * the change, which the update log has), as upstream's debounce would.
 */
export class CrdtEvents {
  private readonly pending = new Map<EditorDoc, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: { readonly store: Store; readonly outbox: Outbox; readonly now: () => number; readonly log: Logger }) {}

  /** A change of `store` (stamped already: its `lastUpdate` is now). */
  changed(key: DocumentKey, store: EditorDoc): void {
    if (this.pending.has(store) || !this.deps.outbox.wants(key.apiKey, 'crdt.update_data')) return;
    this.pending.set(store, { key, since: this.deps.now() });
    // Unref'd: pending events never keep a process alive (a stopping server raises them through `unloading`).
    this.timer ??= setInterval(() => this.raiseDue(false), TICK_MS).unref();
  }

  /** The actor of `stores` is being disposed (unloaded, moved, its lease lost, stopping): their pending events go now. */
  unloading(stores: Iterable<EditorDoc>): void {
    const due: Array<[EditorDoc, Pending]> = [];
    for (const store of stores) {
      const pending = this.pending.get(store);
      if (pending !== undefined) due.push([store, pending]);
    }
    this.raise(due);
  }

  /**
   * The document of `stores` is deleted (its actor is disposed by the delete): their pending events are dropped, not
   * raised, so nothing is said about a document that is gone. An event raised before is in a transaction queued ahead
   * of the delete's last one, which removes it from the outbox (src/delivery/document-data.ts).
   */
  deleted(stores: Iterable<EditorDoc>): void {
    for (const store of stores) this.pending.delete(store);
    this.stopWhenIdle();
  }

  /** Resolves once every event raised so far is committed (the server's stop, before the store closes). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Stops the timer; events still pending are dropped (after `unloading` raised those of every actor). */
  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  /** @internal The tick (tests call it with `all` to skip the wait): raises what is due. */
  raiseDue(all: boolean): void {
    const now = this.deps.now();
    const due: Array<[EditorDoc, Pending]> = [];
    for (const entry of this.pending) {
      const [store, { since }] = entry;
      if (all || now - store.lastUpdate >= CRDT_EVENT_QUIET_MS || now - since >= CRDT_EVENT_MAX_WAIT_MS) due.push(entry);
    }
    this.raise(due);
  }

  /** Nothing pending: the tick stops until the next change. */
  private stopWhenIdle(): void {
    if (this.pending.size > 0 || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One transaction for every due store: each event with the store's content as it is now. */
  private raise(due: ReadonlyArray<readonly [EditorDoc, Pending]>): void {
    if (due.length === 0) return;
    const now = this.deps.now();
    const drafts = due.map(([store, { key }]) => {
      this.pending.delete(store);
      return { type: 'crdt.update_data' as const, apiKey: key.apiKey, organizationId: key.organizationId, documentId: key.documentId, data: payload(key, store.record()) };
    });
    this.stopWhenIdle();
    const { store, outbox, log } = this.deps;
    const written = store.transaction((tx) => {
      for (const draft of drafts) outbox.raise(tx, draft, now);
    });
    const raised = written
      .then(
        () => outbox.committed(),
        (error: unknown) => log.error('raising crdt.update_data events failed; they are lost', { error, events: drafts.length }),
      )
      .finally(() => this.inFlight.delete(raised));
    this.inFlight.add(raised);
  }
}

function payload(key: DocumentKey, record: CrdtRecord): CrdtPayload {
  const json = JSON.stringify(record.data);
  const fits = json === undefined || Buffer.byteLength(json) <= CRDT_EVENT_MAX_DATA_BYTES;
  return {
    crdtData: fits ? record : { ...record, data: null },
    actionUser: { userId: record.lastUpdatedBy },
    metadata: eventMetadata(key),
  };
}
