// Owns on-demand permissions (upstream notes 2.12): grants with optional expiry for a user or group, and effective-permission reports.
import type { AccessRole } from '../../auth/user-tokens.js';
import { directoryClaims, expiryMs, type DirectoryAccessResolver } from '../access.js';
import type { AccessType } from '../api-key-config.js';
import { BulkResults, ItemFailure, type BulkMap } from './bulk.js';
import type { DirectoryDb } from './db.js';
import type { Documents } from './documents.js';
import type { Folders } from './folders.js';
import type { GrantRef, Grants } from './grants.js';
import type { Groups } from './groups.js';
import type { Organizations } from './organizations.js';
import type { Principal } from './records.js';

export interface PermissionResource {
  type: 'organization' | 'folder' | 'document';
  id: string;
  organizationId?: string;
  accessRole?: AccessRole;
  /** Seconds or milliseconds since epoch (values below 1e12 are seconds). */
  expiresAt?: number;
}

/** Who receives the grant: a user, or a user group of one organization. */
export type Grantee = { readonly userId: string } | { readonly organizationId: string; readonly groupId: string };

export interface PermissionView {
  accessRole?: AccessRole;
  accessType?: AccessType;
  expiresAt?: number;
  error?: string;
  errorCode?: 'does_not_exist' | 'permission_denied';
}

export interface UserPermissions {
  organization: Record<string, PermissionView>;
  folders?: Record<string, PermissionView>;
  documents?: Record<string, PermissionView>;
}

/** The per-item key of a resource in add/remove results: `type:id`, with the organization for folders and documents. */
export function resourceKey(resource: Pick<PermissionResource, 'type' | 'id' | 'organizationId'>): string {
  return resource.type === 'organization' ? `organization:${resource.id}` : `${resource.type}:${resource.organizationId ?? ''}:${resource.id}`;
}

export class Permissions {
  constructor(
    private readonly db: DirectoryDb,
    private readonly grants: Grants,
    private readonly organizations: Organizations,
    private readonly folders: Folders,
    private readonly documents: Documents,
    private readonly groups: Groups,
    private readonly access: DirectoryAccessResolver,
    private readonly now: () => number,
  ) {}

  /**
   * Grants each resource; organizations and documents are registered when missing, folders must exist. In bounded
   * writes (DirectoryDb.writeEach), each checking a group grantee is still there (NOT_FOUND for the call when not).
   */
  async add(apiKey: string, grantee: Grantee, resources: readonly PermissionResource[]): Promise<BulkMap> {
    const results = new BulkResults((key) => ({ resource: key }));
    const items = results.unique(resources, resourceKey, 'resource');
    const principal = principalOf(grantee);
    await this.db.writeEach(
      items,
      (resource) => {
        results.attempt(resourceKey(resource), () => {
          const { organizationId, ref } = this.locate(grantee, resource);
          if (ref.level === 'folder' && this.folders.find(apiKey, organizationId, ref.resourceId) === undefined) {
            throw new ItemFailure('not-found', `folder "${ref.resourceId}" does not exist in organization "${organizationId}"`);
          }
          this.organizations.ensure(apiKey, organizationId);
          if (ref.level === 'document') this.documents.ensure(apiKey, organizationId, ref.resourceId);
          const expiresAt = expiryMs(resource.expiresAt);
          this.grants.put(apiKey, organizationId, ref, principal, {
            accessRole: resource.accessRole ?? 'editor',
            grantedAt: this.now(),
            ...(expiresAt === undefined ? {} : { expiresAt }),
          });
          return 'Permission added.';
        });
      },
      () => this.requireGrantee(apiKey, grantee),
    );
    return results.toJSON();
  }

  /** In bounded writes as `add`. */
  async remove(apiKey: string, grantee: Grantee, resources: readonly PermissionResource[]): Promise<BulkMap> {
    const results = new BulkResults((key) => ({ resource: key }));
    const items = results.unique(resources, resourceKey, 'resource');
    const principal = principalOf(grantee);
    await this.db.writeEach(
      items,
      (resource) => {
        results.attempt(resourceKey(resource), () => {
          const { organizationId, ref } = this.locate(grantee, resource);
          if (!this.grants.remove(apiKey, organizationId, ref, principal)) throw new ItemFailure('not-found', 'No such permission to remove.');
          return 'Permission removed.';
        });
      },
      () => this.requireGrantee(apiKey, grantee),
    );
    return results.toJSON();
  }

  /** Effective permissions of each user on the organization and on each folder and document asked about. */
  get(apiKey: string, organizationId: string, userIds: readonly string[], filter: { folderIds?: readonly string[]; documentIds?: readonly string[] }): Record<string, UserPermissions> {
    const now = this.now();
    const report = new Map<string, UserPermissions>();
    for (const userId of userIds) {
      const claims = directoryClaims(apiKey, userId);
      const org = this.access.grantAt(claims, organizationId, 'organization', organizationId, now);
      const entry: UserPermissions = { organization: { [organizationId]: org === undefined || org.role === null ? denied('organization') : granted(org.role, org.expiresAt) } };
      if (filter.folderIds !== undefined) {
        entry.folders = Object.fromEntries(
          filter.folderIds.map((folderId) => {
            if (this.folders.find(apiKey, organizationId, folderId) === undefined) return [folderId, missing('folder')];
            const found = this.access.resolve(claims, { apiKey, organizationId, folderId }, now);
            return [folderId, found.role === null ? denied('folder', found.accessType) : granted(found.role, found.expiresAt, found.accessType)];
          }),
        );
      }
      if (filter.documentIds !== undefined) {
        entry.documents = Object.fromEntries(
          filter.documentIds.map((documentId) => {
            if (this.documents.find(apiKey, organizationId, documentId) === undefined) return [documentId, missing('document')];
            const found = this.access.resolve(claims, { apiKey, organizationId, documentId }, now);
            return [documentId, found.role === null ? denied('document', found.accessType) : granted(found.role, found.expiresAt, found.accessType)];
          }),
        );
      }
      report.set(userId, entry);
    }
    return Object.fromEntries(report);
  }

  /** Only inside a write, before its other writes: a group grantee must name an existing group. */
  private requireGrantee(apiKey: string, grantee: Grantee): void {
    if ('groupId' in grantee) this.groups.requireGroup(apiKey, grantee.organizationId, grantee.groupId);
  }

  private locate(grantee: Grantee, resource: PermissionResource): { organizationId: string; ref: GrantRef } {
    const organizationId = resource.type === 'organization' ? resource.id : resource.organizationId;
    if (organizationId === undefined) throw new ItemFailure('invalid-argument', `organizationId is required for a ${resource.type} resource`);
    if ('groupId' in grantee && grantee.organizationId !== organizationId) {
      throw new ItemFailure('invalid-argument', `group "${grantee.groupId}" belongs to organization "${grantee.organizationId}", not "${organizationId}"`);
    }
    return { organizationId, ref: { level: resource.type, resourceId: resource.id } };
  }
}

function principalOf(grantee: Grantee): Principal {
  return 'userId' in grantee ? { kind: 'user', id: grantee.userId } : { kind: 'group', id: grantee.groupId };
}

function granted(accessRole: AccessRole, expiresAt: number | undefined, accessType?: AccessType): PermissionView {
  return { accessRole, ...(accessType === undefined ? {} : { accessType }), ...(expiresAt === undefined ? {} : { expiresAt }) };
}

function denied(what: string, accessType?: AccessType): PermissionView {
  return { ...(accessType === undefined ? {} : { accessType }), error: `The user has no access to this ${what}.`, errorCode: 'permission_denied' };
}

function missing(what: string): PermissionView {
  return { error: `The ${what} does not exist.`, errorCode: 'does_not_exist' };
}
