// Owns the directory every feature checks against: it builds the parts under src/tenant/directory/ and the access resolver.
import type { Store } from '../store/env.js';
import { DirectoryAccessResolver, type DirectoryView } from './access.js';
import type { AccessType } from './api-key-config.js';
import type { DocumentDataOwner } from './directory/data-owners.js';
import { DirectoryDb, type DirectoryChangeListener } from './directory/db.js';
import { Documents } from './directory/documents.js';
import { Folders } from './directory/folders.js';
import { Grants } from './directory/grants.js';
import { Groups } from './directory/groups.js';
import { Organizations } from './directory/organizations.js';
import { Permissions } from './directory/permissions.js';
import { Users } from './directory/users.js';

export type { DocumentDataOwner } from './directory/data-owners.js';
export { LmdbDocumentData } from './directory/data-owners.js';

export interface DirectoryOptions {
  /** The API key's defaultDocumentAccessType (api-key-config); undefined when the key does not exist. */
  readonly defaultAccessType: (apiKey: string) => AccessType | undefined;
  /** Modules holding per-document data, deleted with their document, folder or organization. */
  readonly dataOwners?: readonly DocumentDataOwner[];
  /** Milliseconds since epoch; injected by tests. */
  readonly now?: () => number;
}

/**
 * Organizations, folders, documents, users, groups and permissions of every API key, in DB.directory.
 * Each write is one LMDB transaction and resolves after commit; a bulk call makes one per ITEMS_PER_WRITE items
 * (src/tenant/directory/db.ts), all before it answers.
 */
export class Directory {
  readonly organizations: Organizations;
  readonly folders: Folders;
  readonly documents: Documents;
  readonly groups: Groups;
  readonly users: Users;
  readonly permissions: Permissions;
  /** The AccessResolver the WebSocket upgrade and REST checks use. */
  readonly access: DirectoryAccessResolver;
  private readonly owners: DocumentDataOwner[];
  private readonly db: DirectoryDb;

  constructor(store: Store, options: DirectoryOptions) {
    const db = new DirectoryDb(store);
    this.db = db;
    const now = options.now ?? Date.now;
    // The owners array is shared by reference, so owners registered later (addDataOwner) are used too.
    this.owners = [...(options.dataOwners ?? [])];
    const defaultAccessType = (apiKey: string): AccessType => options.defaultAccessType(apiKey) ?? 'public';
    const grants = new Grants(db);
    this.organizations = new Organizations(db, this.owners, now);
    this.folders = new Folders(db, grants, this.organizations, this.owners, defaultAccessType, now);
    this.documents = new Documents(db, grants, this.organizations, this.folders, this.owners, now);
    this.groups = new Groups(db, this.organizations, now);
    this.users = new Users(db, grants, this.organizations, this.folders, this.documents, this.groups, now);
    const view: DirectoryView = {
      organization: (apiKey, organizationId) => this.organizations.find(apiKey, organizationId),
      document: (apiKey, organizationId, documentId) => this.documents.find(apiKey, organizationId, documentId),
      folderChain: (apiKey, organizationId, folderId) => this.folders.chain(apiKey, organizationId, folderId),
      grant: (apiKey, organizationId, level, resourceId, principal) => grants.get(apiKey, organizationId, { level, resourceId }, principal),
      groupsOf: (apiKey, organizationId, userId) => this.groups.groupsOf(apiKey, organizationId, userId),
      defaultAccessType: (apiKey) => options.defaultAccessType(apiKey),
    };
    this.access = new DirectoryAccessResolver(view);
    this.permissions = new Permissions(db, grants, this.organizations, this.folders, this.documents, this.groups, this.access, now);
  }

  /**
   * Told after every committed directory write, with the organizations it touched: grants, groups, users, access
   * types and disabled states all live here, so open sync sockets re-check their access on it (src/ws/behavior.ts).
   */
  onChange(listener: DirectoryChangeListener): void {
    this.db.onChange(listener);
  }

  /** For owners built after the directory (the sync registry needs the access resolver first). */
  addDataOwner(owner: DocumentDataOwner): void {
    this.owners.push(owner);
  }
}
