// Owns folders: the tree (parent, ancestors, children index), add/get/rename/re-parent/delete and folder access types.
import { notFound } from '../../errors.js';
import type { AccessType } from '../api-key-config.js';
import { BulkResults, ItemFailure, type BulkMap } from './bulk.js';
import { deleteDocumentData, whileDeleting, type DocumentDataOwner } from './data-owners.js';
import type { DirectoryDb } from './db.js';
import { documentsInFolder, removeDocument } from './document-entries.js';
import type { GrantRef, Grants } from './grants.js';
import type { Organizations } from './organizations.js';
import { ROOT_FOLDER, keys, type DocumentRecord, type FolderRecord } from './records.js';

export interface FolderInput {
  folderId: string;
  folderName?: string;
  parentFolderId?: string;
  accessType?: AccessType;
}

export interface FolderView {
  folderId: string;
  folderName: string;
  organizationId: string;
  parentFolderId: string;
  ancestors: string[];
  accessType: AccessType;
  inheritAccessFromParent: boolean;
  createdAt: number;
  lastUpdated: number;
  subFolders?: FolderView[];
}

export class Folders {
  constructor(
    private readonly db: DirectoryDb,
    private readonly grants: Grants,
    private readonly organizations: Organizations,
    private readonly owners: readonly DocumentDataOwner[],
    private readonly defaultAccessType: (apiKey: string) => AccessType,
    private readonly now: () => number,
  ) {}

  find(apiKey: string, organizationId: string, folderId: string): FolderRecord | undefined {
    return this.db.get<FolderRecord>(keys.folder(apiKey, organizationId, folderId));
  }

  /** The folder and its ancestors, nearest first (the root is not a stored folder). */
  chain(apiKey: string, organizationId: string, folderId: string): FolderRecord[] {
    const folder = this.find(apiKey, organizationId, folderId);
    if (folder === undefined) return [];
    const above = folder.ancestors
      .filter((id) => id !== ROOT_FOLDER)
      .reverse()
      .flatMap((id) => this.find(apiKey, organizationId, id) ?? []);
    return [folder, ...above];
  }

  /** The access type the nearest folder with an explicit one sets, or undefined when every folder inherits. */
  explicitAccessType(apiKey: string, organizationId: string, folderId: string | undefined): AccessType | undefined {
    if (folderId === undefined) return undefined;
    return this.chain(apiKey, organizationId, folderId).find((folder) => folder.accessType !== undefined)?.accessType;
  }

  /**
   * Folders are added in request order, so an item may name a parent added earlier in the same request. In bounded
   * writes (DirectoryDb.writeEach): a folder's record holds its ancestors, so 1,000 folders each under the one before
   * held every workspace's writes for 27–38 ms in one write.
   */
  async add(apiKey: string, organizationId: string, folders: readonly FolderInput[]): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(folders, (folder) => folder.folderId, 'folderId');
    await this.db.writeEach(
      items,
      (input) => {
        results.attempt(input.folderId, () => this.addOne(apiKey, organizationId, input));
      },
      () => this.organizations.ensure(apiKey, organizationId),
    );
    return results.toJSON();
  }

  /** Only inside a write. */
  addOne(apiKey: string, organizationId: string, input: FolderInput): string {
    if (input.folderId === ROOT_FOLDER) throw new ItemFailure('invalid-argument', `"${ROOT_FOLDER}" is reserved for the top of the organization`);
    if (this.find(apiKey, organizationId, input.folderId) !== undefined) {
      throw new ItemFailure('already-exists', `folder "${input.folderId}" already exists`);
    }
    const parentId = input.parentFolderId ?? ROOT_FOLDER;
    const ancestors = this.ancestorsUnder(apiKey, organizationId, parentId);
    const now = this.now();
    const record: FolderRecord = {
      folderId: input.folderId,
      folderName: input.folderName ?? input.folderId,
      parentFolderId: parentId,
      ancestors,
      createdAt: now,
      lastUpdated: now,
      ...(input.accessType === undefined ? {} : { accessType: input.accessType }),
    };
    this.db.put(keys.folder(apiKey, organizationId, input.folderId), record);
    this.db.put(keys.folderChild(apiKey, organizationId, parentId, input.folderId), true);
    return 'Folder added.';
  }

  /** One folder with its subfolders `maxDepth` levels down (default 1), or every folder of the organization, flat. */
  get(apiKey: string, organizationId: string, filter: { folderId?: string; maxDepth?: number }): FolderView[] {
    if (filter.folderId === undefined) {
      return this.db.scan<FolderRecord>(keys.folders(apiKey, organizationId)).map(({ value }) => this.view(apiKey, organizationId, value, 0));
    }
    const folder = this.find(apiKey, organizationId, filter.folderId);
    if (folder === undefined) throw notFound(`data.folderId: folder "${filter.folderId}" does not exist in organization "${organizationId}"`);
    return [this.view(apiKey, organizationId, folder, filter.maxDepth ?? 1)];
  }

  /**
   * Renames and re-parents in request order, in bounded writes; a re-parent carries the whole subtree and recomputes
   * its ancestors in the item's write (a subtree of 5,000 folders: 34–100 ms in it, docs/limits.md).
   */
  async update(apiKey: string, organizationId: string, folders: ReadonlyArray<{ folderId: string; folderName?: string; parentFolderId?: string }>): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(folders, (folder) => folder.folderId, 'folderId');
    await this.db.writeEach(items, (input) => {
      results.attempt(input.folderId, () => {
        const folder = this.find(apiKey, organizationId, input.folderId);
        if (folder === undefined) throw new ItemFailure('not-found', 'Folder does not exist.');
        let next: FolderRecord = { ...folder, lastUpdated: this.now() };
        if (input.folderName !== undefined) next.folderName = input.folderName;
        if (input.parentFolderId !== undefined && input.parentFolderId !== folder.parentFolderId) {
          next = this.reparent(apiKey, organizationId, next, input.parentFolderId);
        }
        this.db.put(keys.folder(apiKey, organizationId, folder.folderId), next);
        return 'Folder Updated.';
      });
    });
    return results.toJSON();
  }

  private reparent(apiKey: string, organizationId: string, folder: FolderRecord, parentId: string): FolderRecord {
    const ancestors = this.ancestorsUnder(apiKey, organizationId, parentId);
    if (parentId === folder.folderId || ancestors.includes(folder.folderId)) {
      throw new ItemFailure('invalid-argument', `cannot move folder "${folder.folderId}" into itself or its own subtree ("${parentId}")`);
    }
    this.db.remove(keys.folderChild(apiKey, organizationId, folder.parentFolderId, folder.folderId));
    this.db.put(keys.folderChild(apiKey, organizationId, parentId, folder.folderId), true);
    const lineage = [...ancestors, folder.folderId];
    for (const descendant of this.descendants(apiKey, organizationId, folder.folderId)) {
      const below = descendant.ancestors.slice(descendant.ancestors.indexOf(folder.folderId) + 1);
      this.db.put(keys.folder(apiKey, organizationId, descendant.folderId), { ...descendant, ancestors: [...lineage, ...below] });
    }
    return { ...folder, parentFolderId: parentId, ancestors };
  }

  /** Deletes the folder, its subfolders and every document in them, with the documents' data, the documents held meanwhile. */
  async delete(apiKey: string, organizationId: string, folderId: string): Promise<{ folders: number; documents: number }> {
    const root = this.find(apiKey, organizationId, folderId);
    if (root === undefined) throw notFound(`data.folderId: folder "${folderId}" does not exist in organization "${organizationId}"`);
    const below = this.descendants(apiKey, organizationId, folderId);
    const documents = [root, ...below].flatMap((folder) => documentsInFolder(this.db, apiKey, organizationId, folder.folderId));
    const refs = documents.map((doc) => ({ apiKey, organizationId, documentId: doc.documentId }));
    return whileDeleting(this.owners, { documents: refs }, () => this.deleteHeld(apiKey, organizationId, root, below, documents));
  }

  private async deleteHeld(apiKey: string, organizationId: string, root: FolderRecord, below: readonly FolderRecord[], documents: readonly DocumentRecord[]): Promise<{ folders: number; documents: number }> {
    const folderId = root.folderId;
    const subtree = [root, ...below];
    await deleteDocumentData(this.owners, documents.map((doc) => ({ apiKey, organizationId, documentId: doc.documentId })));
    const granted: GrantRef[] = [
      ...documents.map((doc) => ({ level: 'document' as const, resourceId: doc.documentId })),
      ...subtree.map((folder) => ({ level: 'folder' as const, resourceId: folder.folderId })),
    ];
    await this.grants.removeResourcesInWrites(apiKey, organizationId, granted);
    const documentsRemoved = await this.removeDocumentEntries(apiKey, organizationId, new Set(subtree.map((folder) => folder.folderId)), documents);
    const subfoldersRemoved = await this.removeSubfolders(apiKey, organizationId, folderId, below);
    return this.db.write(() => {
      // Re-read inside the transaction: folders and documents may have been added or moved in since the scan above.
      const folders = [root, ...this.descendants(apiKey, organizationId, folderId)];
      let documentsLeft = 0;
      for (const folder of folders) documentsLeft += this.removeFolder(apiKey, organizationId, folder);
      return { folders: subfoldersRemoved.folders + folders.length, documents: documentsRemoved + subfoldersRemoved.documents + documentsLeft };
    });
  }

  /**
   * Removes the scanned subfolders, deepest first, ITEMS_PER_WRITE to a committed write, before the last transaction
   * takes the folder itself: one transaction for a subtree of 5,000 folders held every workspace's writes for 100–181
   * ms (bench/README.md, "Twenty-fourth session: bulk directory operations in bounded writes"). A folder is removed
   * only while it is still below `folderId` and has no subfolder left (one added since the scan keeps it and its
   * ancestors for the last transaction), so every commit leaves a whole tree. Answers how many folders it removed,
   * and how many documents put in them since the scan.
   */
  private async removeSubfolders(apiKey: string, organizationId: string, folderId: string, below: readonly FolderRecord[]): Promise<{ folders: number; documents: number }> {
    let documents = 0;
    const folders = await this.db.writeEach([...below].reverse(), (scanned) => {
      const current = this.find(apiKey, organizationId, scanned.folderId);
      if (current === undefined || !current.ancestors.includes(folderId)) return false;
      if (this.db.scan<true>(keys.folderChildren(apiKey, organizationId, current.folderId), { limit: 1 }).length > 0) return false;
      documents += this.removeFolder(apiKey, organizationId, current);
      return true;
    });
    return { folders, documents };
  }

  /** Only inside a write: the folder's entry, its child index rows, the grants on it and the documents in it; answers how many documents. */
  private removeFolder(apiKey: string, organizationId: string, folder: FolderRecord): number {
    const documents = documentsInFolder(this.db, apiKey, organizationId, folder.folderId);
    for (const doc of documents) removeDocument(this.db, this.grants, apiKey, organizationId, doc);
    this.grants.removeResource(apiKey, organizationId, { level: 'folder', resourceId: folder.folderId });
    this.db.removePrefix(keys.folderChildren(apiKey, organizationId, folder.folderId));
    this.db.remove(keys.folderChild(apiKey, organizationId, folder.parentFolderId, folder.folderId));
    this.db.remove(keys.folder(apiKey, organizationId, folder.folderId));
    return documents.length;
  }

  /**
   * Removes the scanned documents' directory entries (and grants) ITEMS_PER_WRITE to a committed write, before the
   * subfolders and the folder itself: one transaction for all of them held every tenant's writes for 20–45 ms at 1,000
   * documents (bench/README.md, "Twenty-third session: a folder's documents in bounded writes"). A document moved out
   * of the subtree (or deleted) since the scan is left alone. Answers how many were removed.
   */
  private removeDocumentEntries(apiKey: string, organizationId: string, subtree: ReadonlySet<string>, documents: readonly DocumentRecord[]): Promise<number> {
    return this.db.writeEach(documents, (scanned) => {
      const current = this.db.get<DocumentRecord>(keys.doc(apiKey, organizationId, scanned.documentId));
      if (current?.folderId === undefined || !subtree.has(current.folderId)) return false;
      removeDocument(this.db, this.grants, apiKey, organizationId, current);
      return true;
    });
  }

  /** Sets an explicit access type, or with `inherit` goes back to inheriting from the parent; in bounded writes. */
  async setAccess(apiKey: string, organizationId: string, folderIds: readonly string[], change: { accessType?: AccessType; inherit: boolean }): Promise<BulkMap> {
    const results = new BulkResults();
    const ids = results.unique(folderIds, (id) => id, 'folderId');
    await this.db.writeEach(ids, (id) => {
      results.attempt(id, () => {
        const folder = this.find(apiKey, organizationId, id);
        if (folder === undefined) throw new ItemFailure('not-found', 'Folder does not exist.');
        const { accessType: _old, ...rest } = folder;
        const next: FolderRecord = change.inherit || change.accessType === undefined ? rest : { ...rest, accessType: change.accessType };
        this.db.put(keys.folder(apiKey, organizationId, id), { ...next, lastUpdated: this.now() });
        return { message: 'Folder access updated.', fields: { accessType: this.effectiveAccessType(apiKey, organizationId, id) } };
      });
    });
    return results.toJSON();
  }

  effectiveAccessType(apiKey: string, organizationId: string, folderId: string | undefined): AccessType {
    return this.explicitAccessType(apiKey, organizationId, folderId) ?? this.defaultAccessType(apiKey);
  }

  /** Every folder below `folderId`, parents before children. */
  descendants(apiKey: string, organizationId: string, folderId: string): FolderRecord[] {
    const found: FolderRecord[] = [];
    const queue = [folderId];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      for (const childId of this.db.lastElements(keys.folderChildren(apiKey, organizationId, next))) {
        const child = this.find(apiKey, organizationId, childId);
        if (child === undefined) continue;
        found.push(child);
        queue.push(childId);
      }
    }
    return found;
  }

  /** Ancestors of a folder placed under `parentId`; NOT_FOUND as an item failure when the parent does not exist. */
  private ancestorsUnder(apiKey: string, organizationId: string, parentId: string): string[] {
    if (parentId === ROOT_FOLDER) return [ROOT_FOLDER];
    const parent = this.find(apiKey, organizationId, parentId);
    if (parent === undefined) throw new ItemFailure('not-found', `parent folder "${parentId}" does not exist`);
    return [...parent.ancestors, parent.folderId];
  }

  private view(apiKey: string, organizationId: string, folder: FolderRecord, depth: number): FolderView {
    const base: FolderView = {
      folderId: folder.folderId,
      folderName: folder.folderName,
      organizationId,
      parentFolderId: folder.parentFolderId,
      ancestors: folder.ancestors,
      accessType: this.effectiveAccessType(apiKey, organizationId, folder.folderId),
      inheritAccessFromParent: folder.accessType === undefined,
      createdAt: folder.createdAt,
      lastUpdated: folder.lastUpdated,
    };
    if (depth <= 0) return base;
    const children = this.db
      .lastElements(keys.folderChildren(apiKey, organizationId, folder.folderId))
      .flatMap((id) => this.find(apiKey, organizationId, id) ?? [])
      .map((child) => this.view(apiKey, organizationId, child, depth - 1));
    return { ...base, subFolders: children };
  }
}
