// Owns the REST CRDT operations of one document (records, Add and Update CRDT Data): each write is one Yjs update applied in the actor's mailbox and answered once committed.
import * as Y from 'yjs';
import { alreadyExists, failedPrecondition, notFound } from '../errors.js';
import { limitRefusals } from '../metrics/instruments.js';
import type { UpdateLog } from '../store/update-log.js';
import { isEmptyUpdate } from '../sync/protocol.js';
import { defineRoot } from './crdt.js';
import { planWrite, type StoreWrite } from './crdt-write.js';
import type { CrdtRecord, EditorDoc } from './editor-doc.js';
import { REST_ORIGIN } from './peer.js';

/** What the writes need of the document's actor: its mailbox and its stores. */
export interface WritableStores {
  /** Runs `task` in the document's mailbox, after everything queued before it. */
  ask<T>(task: () => T): Promise<T>;
  get(editorId: string): EditorDoc | undefined;
  /** Makes an empty store for `editorId` (it exists on disk once written). */
  create(editorId: string): EditorDoc;
  all(): Iterable<EditorDoc>;
  /** Whether `added` more bytes keep the document within MAX_DOCUMENT_BYTES (DocumentActor.fits). */
  fits(added: number): boolean;
}

/** Made at a document's first REST CRDT operation: most loaded documents only ever see sync traffic. */
export class StoreWrites {
  /** Commit promises of the write running now (filled by `logged`), so it can answer only after they commit. */
  private commits: Array<Promise<void>> | undefined;

  constructor(private readonly stores: WritableStores, private readonly updateLog: UpdateLog) {}

  /** The actor logged a change: when a REST write is running, its answer waits for this commit too. */
  logged(commit: Promise<void>): void {
    this.commits?.push(commit);
  }

  records(editorId?: string): Promise<CrdtRecord[]> {
    return this.stores.ask(() => {
      const stores = editorId === undefined ? [...this.stores.all()] : [this.stores.get(editorId)];
      return stores.filter((store): store is EditorDoc => store?.exists === true).map((store) => store.record());
    });
  }

  /** Creates a store's content (ALREADY_EXISTS when it has some); resolves once committed. */
  async add(editorId: string, write: StoreWrite): Promise<void> {
    const commits = await this.stores.ask(() => {
      const existing = this.stores.get(editorId);
      if (existing?.exists === true) throw alreadyExists('CRDT data already exists for this editor ID.');
      return this.write(existing ?? this.stores.create(editorId), write);
    });
    await this.committed(commits);
  }

  /** Replaces a store's content with real Yjs operations (NOT_FOUND when absent); resolves once committed. */
  async update(editorId: string, write: StoreWrite): Promise<void> {
    const commits = await this.stores.ask(() => {
      const store = this.stores.get(editorId);
      if (store?.exists !== true) throw notFound('No CRDT data found for this editor ID.');
      return this.write(store, write);
    });
    await this.committed(commits);
  }

  /** A REST caller waits for the disk, so its batch commits now instead of at the end of the group-commit window. */
  private async committed(commits: ReadonlyArray<Promise<void>>): Promise<void> {
    // flush() never rejects (a failed commit rejects the batch's promises, which are in `commits`).
    void this.updateLog.flush();
    await Promise.all(commits);
  }

  /** Applies a REST write as one Yjs update (planned on a scratch copy: `planWrite`); returns the commit promises (not awaited inside the mailbox). */
  private write(store: EditorDoc, write: StoreWrite): Array<Promise<void>> {
    const { contentKey, update } = planWrite(store, write);
    // Planned on a scratch copy, so its size is known before anything is applied.
    if (update !== undefined && !this.stores.fits(update.length)) {
      limitRefusals.document_bytes++;
      throw failedPrecondition('this write would take the document past its size limit (MAX_DOCUMENT_BYTES) as stored; nothing was written');
    }
    const commits: Array<Promise<void>> = [];
    this.commits = commits;
    try {
      // The root is defined on the store too, so reads see its type even when the write changed no content.
      defineRoot(store.doc, write.type, contentKey);
      if (update !== undefined && !isEmptyUpdate(update)) Y.applyUpdate(store.doc, update, REST_ORIGIN);
    } finally {
      this.commits = undefined;
    }
    store.type = write.type;
    store.contentKey = contentKey;
    // Add with empty data changes no content, yet the store must now exist on disk.
    if (commits.length === 0) {
      store.touch(REST_ORIGIN, Date.now());
      commits.push(this.updateLog.requestSnapshot(store));
    }
    return commits;
  }
}
