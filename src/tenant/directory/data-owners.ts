// Owns the seam through which deleting directory entries also deletes the document data other modules hold.
import type { Store } from '../../store/env.js';
import { DB } from '../../store/keys.js';
import { removeRangeInBatches, type RangeHolder } from '../../store/chunked-scan.js';
import { threadRanges } from '../../store/thread-times.js';
import type { DocumentKey } from '../../document-key.js';

/**
 * A module that keeps data per document (CRDT stores, comment annotations, presence). The directory calls it
 * before removing a document or organization, so a retried delete still finds the entry and finishes the job.
 */
export interface DocumentDataOwner {
  deleteDocumentData(ref: DocumentKey): Promise<void>;
  /** Optional: many documents at once (a folder's), for an owner whose rows are found by scanning, not by key prefix. */
  deleteDocumentsData?(refs: readonly DocumentKey[]): Promise<void>;
  /** Everything of the organization, including documents the directory never registered (opened by the sync endpoint only). */
  deleteOrganizationData(apiKey: string, organizationId: string): Promise<void>;
  /**
   * Optional: runs a whole delete (every owner's part, then the directory entries) with its documents held, so a write
   * or sync connection arriving meanwhile lands wholly before or wholly after it (the document registry's).
   */
  whileDeleting?<T>(scope: DeleteScope, work: () => Promise<T>): Promise<T>;
}

/** What a delete removes: documents by key, or whole organizations (their documents, registered or not). */
export interface DeleteScope {
  readonly documents?: readonly DocumentKey[];
  readonly organizations?: ReadonlyArray<{ readonly apiKey: string; readonly organizationId: string }>;
}

/** The databases keyed [apiKey, organizationId, documentId, ...] that hold document data. */
export const DOCUMENT_DATABASES = [DB.docUpdates, DB.docSnapshots, DB.editorDocMeta, DB.annotations, DB.presence, DB.liveState, DB.recordings] as const;

/**
 * Removes the LMDB ranges directly. Correct when no actor holds the document in memory; the sync and comment
 * owners, once wired, also unload their actors so a later snapshot cannot write the data back.
 */
export class LmdbDocumentData implements DocumentDataOwner {
  constructor(private readonly store: Store) {}

  deleteDocumentData(ref: DocumentKey): Promise<void> {
    return this.removeRanges([ref.apiKey, ref.organizationId, ref.documentId]);
  }

  deleteOrganizationData(apiKey: string, organizationId: string): Promise<void> {
    return this.removeRanges([apiKey, organizationId]);
  }

  /** REMOVE_BATCH keys to a transaction: an organization's ranges may hold millions of rows (src/store/chunked-scan.ts). */
  private async removeRanges(prefix: string[]): Promise<void> {
    // A thread's index row goes with it (it is keyed by time, outside the document's range): `threadRanges`.
    const databases = DOCUMENT_DATABASES.filter((name) => name !== DB.annotations).map((name): RangeHolder => (name === DB.docUpdates || name === DB.docSnapshots ? this.store.binary(name) : this.store.records<unknown>(name)));
    await removeRangeInBatches(this.store, [...threadRanges(this.store, prefix), ...databases], prefix);
  }
}

/** Runs `work` (the owners, then the directory entries) inside every owner's `whileDeleting`, the first owner's outermost. */
export function whileDeleting<T>(owners: readonly DocumentDataOwner[], scope: DeleteScope, work: () => Promise<T>): Promise<T> {
  const [first, ...rest] = owners;
  if (first === undefined) return work();
  const inner = (): Promise<T> => whileDeleting(rest, scope, work);
  return first.whileDeleting === undefined ? inner() : first.whileDeleting(scope, inner);
}

/** Runs every owner for each document, one after another (all of them at once for an owner that takes many). */
export async function deleteDocumentData(owners: readonly DocumentDataOwner[], refs: readonly DocumentKey[]): Promise<void> {
  for (const owner of owners) {
    if (owner.deleteDocumentsData !== undefined) {
      if (refs.length > 0) await owner.deleteDocumentsData(refs);
      continue;
    }
    for (const ref of refs) await owner.deleteDocumentData(ref);
  }
}

/** Runs every owner for a whole organization (covers its documents, registered or not). */
export async function deleteOrganizationData(owners: readonly DocumentDataOwner[], apiKey: string, organizationId: string): Promise<void> {
  for (const owner of owners) await owner.deleteOrganizationData(apiKey, organizationId);
}
