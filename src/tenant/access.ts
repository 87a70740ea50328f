// Owns the answer to "what may this user do on this document": the effective role, and when that access lapses.
import type { AccessRole, TokenResource, UserClaims } from '../auth/user-tokens.js';

export interface DocumentRef {
  readonly apiKey: string;
  readonly organizationId: string;
  readonly documentId: string;
}

export interface DocumentAccess {
  /** null = no access. */
  readonly role: AccessRole | null;
  /** Milliseconds since epoch at which the granting permission lapses; undefined = does not lapse. */
  readonly expiresAt?: number;
}

/** The seam the WebSocket upgrade and REST checks use; the identity work extends the implementation behind it. */
export interface AccessResolver {
  documentAccess(claims: UserClaims, document: DocumentRef, now: number): DocumentAccess;
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
export function tokenDocumentAccess(claims: UserClaims, document: DocumentRef, now: number): DocumentAccess {
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
