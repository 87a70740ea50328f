// Owns the low-level writes of one document entry and its two listing indexes; shared by documents and folders.
import type { DirectoryDb } from './db.js';
import type { Grants } from './grants.js';
import { keys, type DocumentRecord } from './records.js';

export type NewDocument = Omit<DocumentRecord, 'seq'>;

/** Only inside a write. Stores the document at the end of the organization's listing order. */
export function insertDocument(db: DirectoryDb, apiKey: string, organizationId: string, document: NewDocument): DocumentRecord {
  const seqKey = keys.docSeq(apiKey, organizationId);
  const seq = (db.get<number>(seqKey) ?? 0) + 1;
  db.put(seqKey, seq);
  const record: DocumentRecord = { ...document, seq };
  db.put(keys.doc(apiKey, organizationId, record.documentId), record);
  db.put(keys.docOrder(apiKey, organizationId, seq), record.documentId);
  if (record.folderId !== undefined) db.put(keys.folderDoc(apiKey, organizationId, record.folderId, seq), record.documentId);
  return record;
}

/** Only inside a write. Removes the document, its index entries and every grant on it. */
export function removeDocument(db: DirectoryDb, grants: Grants, apiKey: string, organizationId: string, record: DocumentRecord): void {
  db.remove(keys.doc(apiKey, organizationId, record.documentId));
  db.remove(keys.docOrder(apiKey, organizationId, record.seq));
  if (record.folderId !== undefined) db.remove(keys.folderDoc(apiKey, organizationId, record.folderId, record.seq));
  grants.removeResource(apiKey, organizationId, { level: 'document', resourceId: record.documentId });
}

/** Only inside a write. Moves the document into `folderId` (undefined = top of the organization); keeps its listing position. */
export function placeDocument(
  db: DirectoryDb,
  apiKey: string,
  organizationId: string,
  record: DocumentRecord,
  folderId: string | undefined,
  now: number,
): DocumentRecord {
  if (record.folderId !== undefined) db.remove(keys.folderDoc(apiKey, organizationId, record.folderId, record.seq));
  const { folderId: _previous, ...rest } = record;
  const moved: DocumentRecord = folderId === undefined ? { ...rest, lastUpdated: now } : { ...rest, folderId, lastUpdated: now };
  db.put(keys.doc(apiKey, organizationId, record.documentId), moved);
  if (folderId !== undefined) db.put(keys.folderDoc(apiKey, organizationId, folderId, record.seq), record.documentId);
  return moved;
}

/** The documents directly inside a folder. */
export function documentsInFolder(db: DirectoryDb, apiKey: string, organizationId: string, folderId: string): DocumentRecord[] {
  return db
    .scan<string>(keys.folderDocs(apiKey, organizationId, folderId))
    .flatMap(({ value }) => {
      const record = db.get<DocumentRecord>(keys.doc(apiKey, organizationId, value));
      return record === undefined ? [] : [record];
    });
}

/**
 * Only inside a write. Gives the document a new id in place: same listing position, folder, access and metadata;
 * the grants on it move along. A name that was only the old id becomes the new id.
 */
export function rekeyDocument(db: DirectoryDb, grants: Grants, apiKey: string, organizationId: string, record: DocumentRecord, newId: string, now: number): DocumentRecord {
  const moved: DocumentRecord = {
    ...record,
    documentId: newId,
    documentName: record.documentName === record.documentId ? newId : record.documentName,
    lastUpdated: now,
  };
  db.remove(keys.doc(apiKey, organizationId, record.documentId));
  db.put(keys.doc(apiKey, organizationId, newId), moved);
  db.put(keys.docOrder(apiKey, organizationId, record.seq), newId);
  if (record.folderId !== undefined) db.put(keys.folderDoc(apiKey, organizationId, record.folderId, record.seq), newId);
  grants.moveResource(apiKey, organizationId, { level: 'document', resourceId: record.documentId }, { level: 'document', resourceId: newId });
  return moved;
}
