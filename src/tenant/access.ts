// Owns the answer to "what may this user do on this document": the effective role, and when that access lapses.
import type { AccessRole, TokenResource, UserClaims } from '../auth/user-tokens.js';
import type { DocumentKey } from '../document-key.js';
import type { AccessType } from './api-key-config.js';
import type { GrantRecord, Level, Principal } from './directory/records.js';

export interface DocumentAccess {
  /** null = no access. */
  readonly role: AccessRole | null;
  /** Milliseconds since epoch at which the granting permission lapses; undefined = does not lapse. */
  readonly expiresAt?: number;
}

/** The seam the WebSocket upgrade and REST checks use; the identity work extends the implementation behind it. */
export interface AccessResolver {
  documentAccess(claims: UserClaims, document: DocumentKey, now: number): DocumentAccess;
}

/** Token `expiresAt` may be sent in seconds (upstream add-permissions) or milliseconds; values below 1e12 are seconds. */
export function expiryMs(expiresAt: number | undefined): number | undefined {
  if (expiresAt === undefined) return undefined;
  return expiresAt < 1e12 ? expiresAt * 1000 : expiresAt;
}

/**
 * Access from the permissions carried in the user's token alone: a document grant overrides an organization
 * grant; expired grants count as absent. (Folder grants and directory grants need the directory.)
 */
export function tokenDocumentAccess(claims: UserClaims, document: DocumentKey, now: number): DocumentAccess {
  if (claims.apiKey !== document.apiKey) return { role: null };
  const live = (resource: TokenResource): boolean => {
    const expires = expiryMs(resource.expiresAt);
    return expires === undefined || expires > now;
  };
  const documentGrant = claims.resources.find(
    (r) => r.type === 'document' && r.id === document.documentId && r.organizationId === document.organizationId && live(r),
  );
  const grant = documentGrant ?? claims.resources.find((r) => r.type === 'organization' && r.id === document.organizationId && live(r));
  if (grant === undefined) return { role: null };
  const expiresAt = expiryMs(grant.expiresAt);
  return expiresAt === undefined ? { role: grant.accessRole ?? 'editor' } : { role: grant.accessRole ?? 'editor', expiresAt };
}

/** What the directory-backed resolver reads; the Directory implements it over LMDB, tests may fake it. */
export interface DirectoryView {
  organization(apiKey: string, organizationId: string): { readonly disabled: boolean } | undefined;
  document(
    apiKey: string,
    organizationId: string,
    documentId: string,
  ): { readonly folderId?: string; readonly accessType?: AccessType; readonly disabled: boolean } | undefined;
  /** The folder and its ancestors, nearest first; empty when the folder does not exist. */
  folderChain(apiKey: string, organizationId: string, folderId: string): ReadonlyArray<{ readonly folderId: string; readonly accessType?: AccessType }>;
  /** The stored grant (expiry in milliseconds), live or not. */
  grant(apiKey: string, organizationId: string, level: Level, resourceId: string, principal: Principal): GrantRecord | undefined;
  groupsOf(apiKey: string, organizationId: string, userId: string): readonly string[];
  /** The API key's defaultDocumentAccessType; undefined when the key does not exist. */
  defaultAccessType(apiKey: string): AccessType | undefined;
}

/** A resource access is asked about: a document, or a folder (Get Permissions), inside an organization. */
export interface AccessTarget {
  readonly apiKey: string;
  readonly organizationId: string;
  readonly documentId?: string;
  readonly folderId?: string;
}

export interface ResolvedAccess extends DocumentAccess {
  /** The access type in force for the target (its own, the nearest folder's, or the API key's default). */
  readonly accessType: AccessType;
}

interface Candidate {
  readonly accessRole?: AccessRole | undefined;
  /** Milliseconds. */
  readonly expiresAt?: number | undefined;
}

/**
 * Effective access from the directory and the user's token together; docs/access-model.md states the rules
 * as a table and test/tenant/access.test.ts tests each row. In short: disabled blocks everything; the most
 * specific level holding a live grant decides (document, then folders nearest first, then organization,
 * the last skipped for restricted resources); within a level the strongest grant wins; with no grant,
 * `public` gives editor and the other access types give nothing.
 */
export class DirectoryAccessResolver implements AccessResolver {
  constructor(private readonly directory: DirectoryView) {}

  documentAccess(claims: UserClaims, document: DocumentKey, now: number): DocumentAccess {
    const { role, expiresAt } = this.resolve(claims, document, now);
    return expiresAt === undefined ? { role } : { role, expiresAt };
  }

  resolve(claims: UserClaims, target: AccessTarget, now: number): ResolvedAccess {
    const { apiKey, organizationId } = target;
    if (claims.apiKey !== apiKey) return { role: null, accessType: 'restricted' };
    const fallbackType = this.directory.defaultAccessType(apiKey);
    if (fallbackType === undefined) return { role: null, accessType: 'restricted' };
    const document = target.documentId === undefined ? undefined : this.directory.document(apiKey, organizationId, target.documentId);
    const folderId = document === undefined ? target.folderId : document.folderId;
    const chain = folderId === undefined ? [] : this.directory.folderChain(apiKey, organizationId, folderId);
    const accessType = document?.accessType ?? chain.find((folder) => folder.accessType !== undefined)?.accessType ?? fallbackType;
    if (this.directory.organization(apiKey, organizationId)?.disabled === true || document?.disabled === true) return { role: null, accessType };
    const levels: Array<{ level: Level; id: string }> = [
      ...(target.documentId === undefined ? [] : [{ level: 'document' as const, id: target.documentId }]),
      ...chain.map((folder) => ({ level: 'folder' as const, id: folder.folderId })),
      ...(accessType === 'restricted' ? [] : [{ level: 'organization' as const, id: organizationId }]),
    ];
    for (const { level, id } of levels) {
      const granted = this.grantAt(claims, organizationId, level, id, now);
      if (granted !== undefined) return { ...granted, accessType };
    }
    return accessType === 'public' ? { role: 'editor', accessType } : { role: null, accessType };
  }

  /** The strongest live grant the user holds at exactly this level: directly, through a group, or in the token. */
  grantAt(claims: UserClaims, organizationId: string, level: Level, resourceId: string, now: number): DocumentAccess | undefined {
    const { apiKey, userId } = claims;
    const stored = [
      this.directory.grant(apiKey, organizationId, level, resourceId, { kind: 'user', id: userId }),
      ...this.directory.groupsOf(apiKey, organizationId, userId).map((groupId) =>
        this.directory.grant(apiKey, organizationId, level, resourceId, { kind: 'group', id: groupId }),
      ),
    ];
    const fromToken = claims.resources
      .filter((r) => r.type === level && r.id === resourceId && (level === 'organization' || r.organizationId === organizationId))
      .map((r) => ({ accessRole: r.accessRole, expiresAt: expiryMs(r.expiresAt) }));
    const candidates: Candidate[] = [...stored.filter((grant) => grant !== undefined), ...fromToken];
    return strongest(candidates.filter((grant) => grant.expiresAt === undefined || grant.expiresAt > now));
  }
}

/** Editor beats viewer; among grants giving the winning role, a permanent one beats any expiry, else the latest expiry. */
function strongest(grants: readonly Candidate[]): DocumentAccess | undefined {
  if (grants.length === 0) return undefined;
  const role: AccessRole = grants.some((grant) => (grant.accessRole ?? 'editor') === 'editor') ? 'editor' : 'viewer';
  const expiries = grants.filter((grant) => (grant.accessRole ?? 'editor') === role).map((grant) => grant.expiresAt);
  if (expiries.includes(undefined)) return { role };
  return { role, expiresAt: Math.max(...expiries.filter((value): value is number => value !== undefined)) };
}

/** Claims for questions asked on the directory alone (Get Permissions): no token resources. */
export function directoryClaims(apiKey: string, userId: string): UserClaims {
  return { userId, apiKey, userProperties: {}, resources: [], expiresAt: Number.MAX_SAFE_INTEGER };
}
