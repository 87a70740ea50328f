// Owns the directory's stored shapes and its key layout inside DB.directory: [apiKey, kind, organizationId, ...ids].
import type { AccessRole } from '../../auth/user-tokens.js';
import type { AccessType } from '../api-key-config.js';

/** parentFolderId of a top-level folder, and the first entry of every folder's ancestors (upstream shape). */
export const ROOT_FOLDER = 'root';

/** Fields every stored entity answers itself; caller-sent metadata never overrides them. */
export const RESERVED_FIELDS = new Set(['id', 'apiKey', 'organizationId', 'disabled', 'accessType', 'createdAt', 'lastUpdated']);

export type Metadata = Record<string, unknown>;

export interface OrganizationRecord {
  organizationId: string;
  organizationName: string;
  disabled: boolean;
  metadata: Metadata;
  createdAt: number;
  lastUpdated: number;
}

export interface FolderRecord {
  folderId: string;
  folderName: string;
  /** ROOT_FOLDER at the top. */
  parentFolderId: string;
  /** ROOT_FOLDER first, then each folder down to the parent. */
  ancestors: string[];
  /** Absent = inherit from the parent folder (and at the top, from the API key's default). */
  accessType?: AccessType;
  createdAt: number;
  lastUpdated: number;
}

export interface DocumentRecord {
  documentId: string;
  documentName: string;
  /** Absent = at the top of the organization. */
  folderId?: string;
  /** Absent = inherit from the folder chain, then from the API key's default. */
  accessType?: AccessType;
  disabled: boolean;
  metadata: Metadata;
  /** Position in the organization's listing order: increases with every document added, never reused. */
  seq: number;
  createdAt: number;
  lastUpdated: number;
}

export interface UserProfileRecord {
  userId: string;
  /** name, email, photoUrl and any other fields the caller sent. */
  profile: Metadata;
  createdAt: number;
  lastUpdated: number;
}

export interface GroupRecord {
  organizationUserGroupId: string;
  groupName: string;
  createdAt: number;
}

export type Level = 'organization' | 'folder' | 'document';

export interface Principal {
  readonly kind: 'user' | 'group';
  readonly id: string;
}

export interface GrantRecord {
  accessRole: AccessRole;
  /** Milliseconds since epoch; absent = permanent. */
  expiresAt?: number;
  grantedAt: number;
}

export type DirKey = Array<string | number>;

/**
 * Key builders. Every kind except `org` is scoped by organization in its third element, so deleting an
 * organization is one range removal per kind (ORG_SCOPED_KINDS).
 */
export const keys = {
  org: (apiKey: string, organizationId: string): DirKey => [apiKey, 'org', organizationId],
  orgs: (apiKey: string): DirKey => [apiKey, 'org'],
  folder: (apiKey: string, organizationId: string, folderId: string): DirKey => [apiKey, 'folder', organizationId, folderId],
  folders: (apiKey: string, organizationId: string): DirKey => [apiKey, 'folder', organizationId],
  /** -> true; children of a folder (parent ROOT_FOLDER for the top level). */
  folderChild: (apiKey: string, organizationId: string, parentId: string, childId: string): DirKey => [
    apiKey,
    'folder-child',
    organizationId,
    parentId,
    childId,
  ],
  folderChildren: (apiKey: string, organizationId: string, parentId: string): DirKey => [apiKey, 'folder-child', organizationId, parentId],
  doc: (apiKey: string, organizationId: string, documentId: string): DirKey => [apiKey, 'doc', organizationId, documentId],
  /** -> documentId, in listing order. */
  docOrder: (apiKey: string, organizationId: string, seq: number): DirKey => [apiKey, 'doc-order', organizationId, seq],
  docOrders: (apiKey: string, organizationId: string): DirKey => [apiKey, 'doc-order', organizationId],
  /** -> documentId, the documents directly in a folder, in listing order. */
  folderDoc: (apiKey: string, organizationId: string, folderId: string, seq: number): DirKey => [
    apiKey,
    'folder-doc',
    organizationId,
    folderId,
    seq,
  ],
  folderDocs: (apiKey: string, organizationId: string, folderId: string): DirKey => [apiKey, 'folder-doc', organizationId, folderId],
  /** -> number, the last seq handed out in the organization. */
  docSeq: (apiKey: string, organizationId: string): DirKey => [apiKey, 'doc-seq', organizationId],
  user: (apiKey: string, organizationId: string, userId: string): DirKey => [apiKey, 'user', organizationId, userId],
  group: (apiKey: string, organizationId: string, groupId: string): DirKey => [apiKey, 'group', organizationId, groupId],
  /** -> addedAt. */
  member: (apiKey: string, organizationId: string, groupId: string, userId: string): DirKey => [apiKey, 'member', organizationId, groupId, userId],
  members: (apiKey: string, organizationId: string, groupId: string): DirKey => [apiKey, 'member', organizationId, groupId],
  /** -> true; reverse of `member`, to find a user's groups in one range. */
  userGroup: (apiKey: string, organizationId: string, userId: string, groupId: string): DirKey => [apiKey, 'user-group', organizationId, userId, groupId],
  userGroups: (apiKey: string, organizationId: string, userId: string): DirKey => [apiKey, 'user-group', organizationId, userId],
  grant: (apiKey: string, organizationId: string, level: Level, resourceId: string, principal: Principal): DirKey => [
    apiKey,
    'grant',
    organizationId,
    level,
    resourceId,
    principal.kind,
    principal.id,
  ],
  resourceGrants: (apiKey: string, organizationId: string, level: Level, resourceId: string, kind?: Principal['kind']): DirKey =>
    kind === undefined ? [apiKey, 'grant', organizationId, level, resourceId] : [apiKey, 'grant', organizationId, level, resourceId, kind],
  /** -> true; reverse of `grant`, to find every grant of one principal in an organization. */
  principalGrant: (apiKey: string, organizationId: string, principal: Principal, level: Level, resourceId: string): DirKey => [
    apiKey,
    'principal-grant',
    organizationId,
    principal.kind,
    principal.id,
    level,
    resourceId,
  ],
  principalGrants: (apiKey: string, organizationId: string, principal: Principal): DirKey => [
    apiKey,
    'principal-grant',
    organizationId,
    principal.kind,
    principal.id,
  ],
} as const;

export const ORG_SCOPED_KINDS = [
  'folder',
  'folder-child',
  'doc',
  'doc-order',
  'folder-doc',
  'doc-seq',
  'user',
  'group',
  'member',
  'user-group',
  'grant',
  'principal-grant',
] as const;

/** Splits caller-sent fields into the known ones (read by the caller) and metadata, dropping reserved names. */
export function metadataOf(input: Readonly<Record<string, unknown>>, known: readonly string[]): Metadata {
  // fromEntries defines own properties, so a caller field named "__proto__" stays data, never a prototype.
  return Object.fromEntries(Object.entries(input).filter(([name]) => !known.includes(name) && !RESERVED_FIELDS.has(name)));
}
