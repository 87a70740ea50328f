// Owns documents: add, stable paged get, update, move, access type, disable state and delete (with their data).
import { invalidArgument, notFound } from '../../errors.js';
import type { AccessType } from '../api-key-config.js';
import { BulkResults, idCounts, ItemFailure, type BulkMap } from './bulk.js';
import { deleteDocumentData, whileDeleting, type DocumentDataOwner } from './data-owners.js';
import type { DirectoryDb } from './db.js';
import { insertDocument, placeDocument, rekeyDocument, removeDocument } from './document-entries.js';
import type { Folders } from './folders.js';
import type { Grants } from './grants.js';
import type { Organizations } from './organizations.js';
import { decodePageToken, encodePageToken, type Page } from './paging.js';
import { ROOT_FOLDER, keys, metadataOf, type DocumentRecord } from './records.js';

export interface DocumentInput {
  documentId: string;
  documentName?: string;
  accessType?: AccessType;
  [metadata: string]: unknown;
}

export interface DocumentView {
  id: string;
  documentName: string;
  folderId?: string;
  disabled: boolean;
  accessType: AccessType;
  createdAt: number;
  lastUpdated: number;
  [metadata: string]: unknown;
}

export interface DocumentQuery {
  documentIds?: readonly string[];
  folderId?: string;
  pageSize: number;
  pageToken?: string;
}

const KNOWN = ['documentId', 'documentName', 'folderId'];

export class Documents {
  constructor(
    private readonly db: DirectoryDb,
    private readonly grants: Grants,
    private readonly organizations: Organizations,
    private readonly folders: Folders,
    private readonly owners: readonly DocumentDataOwner[],
    private readonly now: () => number,
  ) {}

  find(apiKey: string, organizationId: string, documentId: string): DocumentRecord | undefined {
    return this.db.get<DocumentRecord>(keys.doc(apiKey, organizationId, documentId));
  }

  /**
   * Re-keys the document (migration): the grants on it first, in bounded writes, then its entry in one write (with any
   * grant made meanwhile); false when the directory does not know it. Idempotent: run again after a crash between
   * writes, it moves what is left under the old id.
   */
  async rekey(apiKey: string, organizationId: string, documentId: string, newDocumentId: string): Promise<boolean> {
    await this.grants.moveResourceInWrites(apiKey, organizationId, { level: 'document', resourceId: documentId }, { level: 'document', resourceId: newDocumentId });
    return this.db.write(() => {
      const record = this.find(apiKey, organizationId, documentId);
      if (record === undefined) return false;
      rekeyDocument(this.db, this.grants, apiKey, organizationId, record, newDocumentId, this.now());
      return true;
    });
  }

  /** Only inside a write: the document, registered with its id as name when missing (grants may name documents first). */
  ensure(apiKey: string, organizationId: string, documentId: string): DocumentRecord {
    const existing = this.find(apiKey, organizationId, documentId);
    if (existing !== undefined) return existing;
    this.organizations.ensure(apiKey, organizationId);
    const now = this.now();
    return insertDocument(this.db, apiKey, organizationId, {
      documentId,
      documentName: documentId,
      disabled: false,
      metadata: {},
      createdAt: now,
      lastUpdated: now,
    });
  }

  async add(
    apiKey: string,
    organizationId: string,
    documents: readonly DocumentInput[],
    placement: { folderId?: string; createFolder?: boolean } = {},
  ): Promise<BulkMap> {
    const { folderId } = placement;
    if (folderId === ROOT_FOLDER) throw invalidArgument(`data.folderId: "${ROOT_FOLDER}" is reserved; omit folderId to add at the top`);
    if (folderId !== undefined && placement.createFolder !== true && this.folders.find(apiKey, organizationId, folderId) === undefined) {
      throw notFound(`data.folderId: folder "${folderId}" does not exist in organization "${organizationId}" (send createFolder: true to create it)`);
    }
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(documents, (doc) => doc.documentId, 'documentId');
    // In bounded writes (DirectoryDb.writeEach), the organization and folder made sure of in each.
    const prepare = (): void => {
      this.organizations.ensure(apiKey, organizationId);
      if (folderId !== undefined && this.folders.find(apiKey, organizationId, folderId) === undefined) {
        this.folders.addOne(apiKey, organizationId, { folderId });
      }
    };
    await this.db.writeEach(
      items,
      (input) => {
        results.attempt(input.documentId, () => {
          if (this.find(apiKey, organizationId, input.documentId) !== undefined) {
            throw new ItemFailure('already-exists', `document "${input.documentId}" already exists`);
          }
          const now = this.now();
          insertDocument(this.db, apiKey, organizationId, {
            documentId: input.documentId,
            documentName: input.documentName ?? input.documentId,
            disabled: false,
            metadata: metadataOf(input, KNOWN),
            createdAt: now,
            lastUpdated: now,
            ...(folderId === undefined ? {} : { folderId }),
            ...(input.accessType === undefined ? {} : { accessType: input.accessType }),
          });
          return 'Added Successfully';
        });
      },
      prepare,
    );
    return results.toJSON();
  }

  /**
   * Documents by id (in the order asked; unknown ids left out), or all documents of the organization or of
   * one folder in the order they were added. The token is the position of the last row handed out, so a
   * listing never repeats or skips a document, and documents added while paging appear on a later page.
   */
  get(apiKey: string, organizationId: string, query: DocumentQuery): Page<DocumentView> {
    const { folderId } = query;
    if (folderId !== undefined && this.folders.find(apiKey, organizationId, folderId) === undefined) {
      throw notFound(`data.folderId: folder "${folderId}" does not exist in organization "${organizationId}"`);
    }
    const accessTypes = new Map<string | undefined, AccessType>();
    const toView = (record: DocumentRecord): DocumentView => {
      let folderType = accessTypes.get(record.folderId);
      if (folderType === undefined) {
        folderType = this.folders.effectiveAccessType(apiKey, organizationId, record.folderId);
        accessTypes.set(record.folderId, folderType);
      }
      return view(record, record.accessType ?? folderType);
    };
    if (query.documentIds !== undefined) {
      const rows = query.documentIds.flatMap((id) => {
        const record = this.find(apiKey, organizationId, id);
        return record === undefined || (folderId !== undefined && record.folderId !== folderId) ? [] : [toView(record)];
      });
      return { rows };
    }
    const scope = `documents:${organizationId}:${folderId ?? ''}`;
    const prefix = folderId === undefined ? keys.docOrders(apiKey, organizationId) : keys.folderDocs(apiKey, organizationId, folderId);
    const after = query.pageToken === undefined ? undefined : Number(decodePageToken(query.pageToken, scope));
    if (after !== undefined && !Number.isSafeInteger(after)) throw invalidArgument('data.pageToken is not a page token of this listing');
    const found = this.db.scan<string>(prefix, { ...(after === undefined ? {} : { after: [...prefix, after] }), limit: query.pageSize + 1 });
    const page = found.slice(0, query.pageSize).flatMap(({ value }) => this.find(apiKey, organizationId, value) ?? []);
    const rows = page.map(toView);
    const last = page.at(-1);
    return found.length > query.pageSize && last !== undefined ? { rows, nextPageToken: encodePageToken(scope, last.seq) } : { rows };
  }

  async update(apiKey: string, organizationId: string, documents: readonly DocumentInput[]): Promise<BulkMap> {
    return this.eachDocument(apiKey, organizationId, documents, (doc) => doc.documentId, (record, input) => {
      const next: DocumentRecord = {
        ...record,
        documentName: input.documentName ?? record.documentName,
        metadata: { ...record.metadata, ...metadataOf(input, KNOWN) },
        lastUpdated: this.now(),
        ...(input.accessType === undefined ? {} : { accessType: input.accessType }),
      };
      this.db.put(keys.doc(apiKey, organizationId, record.documentId), next);
      return 'Updated Successfully';
    });
  }

  /**
   * The documents' data first, then the grants on them in bounded writes (Grants.removeResourcesInWrites), then their
   * entries; all with the documents held (`whileDeleting`: a write or connection meanwhile waits for the end).
   */
  async delete(apiKey: string, organizationId: string, documentIds: readonly string[]): Promise<BulkMap> {
    // An id asked twice fails as `duplicate` and keeps its entry, so its data stays too.
    const once = [...idCounts(documentIds, (id) => id)].filter(([, count]) => count === 1);
    const documents = once.map(([documentId]) => ({ apiKey, organizationId, documentId }));
    return whileDeleting(this.owners, { documents }, async () => {
      const known = documents.filter((ref) => this.find(apiKey, organizationId, ref.documentId) !== undefined);
      await deleteDocumentData(this.owners, known);
      await this.grants.removeResourcesInWrites(apiKey, organizationId, known.map((ref) => ({ level: 'document', resourceId: ref.documentId })));
      return this.eachDocument(apiKey, organizationId, documentIds, (id) => id, (record) => {
        removeDocument(this.db, this.grants, apiKey, organizationId, record);
        return 'Deleted Successfully';
      });
    });
  }

  /** Moves documents into `folderId`; ROOT_FOLDER moves them to the top of the organization. */
  async move(apiKey: string, organizationId: string, documentIds: readonly string[], folderId: string): Promise<BulkMap> {
    if (folderId !== ROOT_FOLDER && this.folders.find(apiKey, organizationId, folderId) === undefined) {
      throw notFound(`data.folderId: folder "${folderId}" does not exist in organization "${organizationId}"`);
    }
    const target = folderId === ROOT_FOLDER ? undefined : folderId;
    return this.eachDocument(apiKey, organizationId, documentIds, (id) => id, (record) => {
      placeDocument(this.db, apiKey, organizationId, record, target, this.now());
      return 'Document moved.';
    });
  }

  async setAccessType(apiKey: string, organizationId: string, documentIds: readonly string[], accessType: AccessType): Promise<BulkMap> {
    return this.eachDocument(apiKey, organizationId, documentIds, (id) => id, (record) => {
      this.db.put(keys.doc(apiKey, organizationId, record.documentId), { ...record, accessType, lastUpdated: this.now() });
      return { message: 'Access type updated.', fields: { accessType } };
    });
  }

  /** Disabling blocks reading and writing the document for everyone. */
  async setDisabled(apiKey: string, organizationId: string, documentIds: readonly string[], disabled: boolean): Promise<BulkMap> {
    return this.eachDocument(apiKey, organizationId, documentIds, (id) => id, (record) => {
      this.db.put(keys.doc(apiKey, organizationId, record.documentId), { ...record, disabled, lastUpdated: this.now() });
      return { message: disabled ? 'Document disabled.' : 'Document enabled.', fields: { disabled } };
    });
  }

  /** Duplicates and unknown documents fail per item, the rest go through `step`, in bounded writes. */
  private async eachDocument<T>(
    apiKey: string,
    organizationId: string,
    items: readonly T[],
    idOf: (item: T) => string,
    step: (record: DocumentRecord, item: T) => string | { message: string; fields: Readonly<Record<string, unknown>> },
  ): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const unique = results.unique(items, idOf, 'documentId');
    // All before the answer: each item stands alone, and one write for a call's 1,000 documents held every
    // workspace's writes for up to ~30 ms (a delete with grants).
    await this.db.writeEach(unique, (item) => {
      const id = idOf(item);
      results.attempt(id, () => {
        const record = this.find(apiKey, organizationId, id);
        if (record === undefined) throw new ItemFailure('not-found', 'Document does not exist');
        return step(record, item);
      });
    });
    return results.toJSON();
  }
}

function view(record: DocumentRecord, accessType: AccessType): DocumentView {
  return {
    ...record.metadata,
    id: record.documentId,
    documentName: record.documentName,
    ...(record.folderId === undefined ? {} : { folderId: record.folderId }),
    disabled: record.disabled,
    accessType,
    createdAt: record.createdAt,
    lastUpdated: record.lastUpdated,
  };
}
