// Owns one set of thread changes on its way to disk: memory changed when made, rows and outbox events written together, undone on failure.
import type { Database, Key } from 'lmdb';
import type { Outbox } from '../../events/outbox.js';
import type { WriteTx } from '../../store/env.js';
import type { DocumentChange } from '../document-writes.js';
import { eventDraft } from './events.js';
import type { AnnotationRecord, AnnotationView } from './model.js';
import type { DocumentKey } from '../../document-key.js';
import type { RaisedEvent } from './mutations.js';
import { writeThreadTime, type ThreadIndexes } from './time-index.js';
import { keyFits } from '../../limits.js';

/** One thread's change, with the events it raises. */
export interface Change {
  readonly before: AnnotationRecord | undefined;
  /** undefined = the thread is deleted. */
  readonly after: AnnotationRecord | undefined;
  readonly events: readonly RaisedEvent[];
}

export type LiveAnnotationChange = { readonly op: 'upsert'; readonly annotation: AnnotationView } | { readonly op: 'delete'; readonly annotationId: string };

export interface ThreadChangeDeps {
  readonly ref: DocumentKey;
  readonly db: Database<AnnotationRecord, Key>;
  /** Each thread's index rows (by time, by id), written in the transaction of its change. */
  readonly indexes: ThreadIndexes;
  readonly outbox: Outbox;
  /** The document's threads in memory. */
  readonly records: Map<string, AnnotationRecord>;
  readonly published: ((live: readonly LiveAnnotationChange[]) => void) | undefined;
  /** Ids of the threads whose row is still under the annotation id (schema 2, docs/storage.md); undefined: none. */
  readonly legacy: Set<string> | undefined;
}

/**
 * The threads a change set touches appear once each (ids are unique within an add; selections are sets), so `before`
 * is what each thread was and undoing is putting it back.
 */
export class ThreadChanges implements DocumentChange {
  readonly live: LiveAnnotationChange[];
  /** The threads as events carry them (after the change; the last state for a delete). */
  private readonly views: AnnotationView[];
  /** The outbox seqs `write` appended, for `undo` to tell the outbox they did not land. */
  private readonly appended: number[] = [];
  /** Every key the threads' rows and index rows take fits (`keyFits`): the part of `bounded` that cannot change. */
  private readonly keysFit: boolean;

  constructor(
    private readonly deps: ThreadChangeDeps,
    private readonly changes: readonly Change[],
    private readonly now: number,
    views: (record: AnnotationRecord) => AnnotationView,
    /** Undoes what the caller changed besides the threads (the next annotation number). */
    private readonly restore: (() => void) | undefined,
  ) {
    this.views = changes.map((change) => views((change.after ?? change.before) as AnnotationRecord));
    const { apiKey, organizationId, documentId } = deps.ref;
    // The longest key holds the API key, the organization, document and annotation ids and a number.
    this.keysFit = this.views.every((view) => keyFits([apiKey, organizationId, documentId, view.annotationId], 1));
    this.live = changes.map((change, i): LiveAnnotationChange => {
      const view = this.views[i] as AnnotationView;
      if (change.after === undefined) {
        deps.records.delete(view.annotationId);
        return { op: 'delete', annotationId: view.annotationId };
      }
      deps.records.set(view.annotationId, change.after);
      return { op: 'upsert', annotation: view };
    });
  }

  /**
   * Whether the change needs no child transaction (GroupedChange.bounded, asked right before `write`): every key of
   * its threads' rows and index rows fits, and each event it raises writes only bounded rows (`Outbox.raisesBounded`:
   * its outbox row, keyed by a number, and activity and notification records, keyed by the organization and ids Plait
   * makes).
   */
  get bounded(): boolean {
    if (!this.keysFit) return false;
    const { ref, outbox } = this.deps;
    for (const change of this.changes) for (const raised of change.events) if (!outbox.raisesBounded(ref.apiKey, ref.organizationId, raised.type)) return false;
    return true;
  }

  write(tx: WriteTx): void {
    const { ref, db, outbox } = this.deps;
    this.changes.forEach((change, i) => {
      const view = this.views[i] as AnnotationView;
      // The view was built from this record (see the constructor), which lets the draft reuse its comment views.
      const thread = (change.after ?? change.before) as AnnotationRecord;
      const key = [ref.apiKey, ref.organizationId, ref.documentId, thread.annotationNumber];
      if (change.after === undefined) db.removeSync(key);
      else db.putSync(key, change.after);
      // A thread still under its schema-2 key moves to the numbered one with its first change.
      const legacy = this.deps.legacy?.has(view.annotationId) === true;
      writeThreadTime(this.deps.indexes, ref, change.before, change.after, legacy);
      if (legacy) db.removeSync([ref.apiKey, ref.organizationId, ref.documentId, view.annotationId]);
      for (const raised of change.events) {
        // An event nothing acts on (no channel of the API key wants its type) is not raised (`Outbox.wants`); one only
        // recorders keep (the activity log, a notification sent at once) is recorded here, without an outbox row
        // (`Outbox.raise`).
        if (!outbox.wants(ref.apiKey, raised.type)) continue;
        const seq = outbox.raise(tx, eventDraft(ref, view, raised, thread), this.now);
        if (seq !== undefined) this.appended.push(seq);
      }
    });
  }

  undo(): void {
    this.deps.outbox.forget(this.appended);
    this.changes.forEach((change, i) => {
      const id = (this.views[i] as AnnotationView).annotationId;
      if (change.before === undefined) this.deps.records.delete(id);
      else this.deps.records.set(id, change.before);
    });
    this.restore?.();
  }

  committed(): void {
    const legacy = this.deps.legacy;
    if (legacy !== undefined) for (const view of this.views) legacy.delete(view.annotationId);
    this.deps.published?.(this.live);
    // The events are visible now: wake the dispatcher (in a cluster, on whichever node runs it).
    if (this.appended.length > 0) this.deps.outbox.committed();
  }
}
