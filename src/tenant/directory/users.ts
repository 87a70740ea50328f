// Owns directory users: profiles per organization and their role grants at organization, folder or document level.
import type { AccessRole } from '../../auth/user-tokens.js';
import { invalidArgument, notFound } from '../../errors.js';
import { nextTurn, WRITE_BATCH } from '../../store/chunked-scan.js';
import { BulkResults, ItemFailure, type BulkMap } from './bulk.js';
import { ITEMS_PER_WRITE, type DirectoryDb } from './db.js';
import type { Documents } from './documents.js';
import type { Folders } from './folders.js';
import type { GrantRef, Grants } from './grants.js';
import type { Groups } from './groups.js';
import type { Organizations } from './organizations.js';
import { decodePageToken, encodePageToken, type Page } from './paging.js';
import { groupMembersAt, namedUsersOnDocuments } from './user-filters.js';
import { keys, metadataOf, type GrantRecord, type UserProfileRecord } from './records.js';

/** Where a users operation applies: the organization, or one folder or document in it. */
export interface UserScope {
  organizationId: string;
  documentId?: string;
  folderId?: string;
}

export interface UserInput {
  userId: string;
  accessRole?: AccessRole;
  [profile: string]: unknown;
}

export interface UserView {
  userId: string;
  accessRole: AccessRole;
  expiresAt?: number;
  [profile: string]: unknown;
}

export interface UserQuery {
  userIds?: readonly string[];
  organizationUserGroupIds?: readonly string[];
  pageSize: number;
  pageToken?: string;
}

const KNOWN = ['userId', 'accessRole'];
const SCAN_CHUNK = 500;
/** Organizations the GDPR export reads between two turns of the event loop (three short range reads each). */
const ORG_CHUNK = 200;
/**
 * Grants one GDPR export page holds at most over its directory items, as many as the items a page holds of any other
 * feature (EXPORT_PAGE_ITEMS): an organization where the user has more is split into items of its grants, the page
 * ending inside it. One item per organization was unbounded: a user granted on 50,000 documents was a 4.6 MB item,
 * built and sent in one turn of the event loop for every page (~400 ms); at 1,000 grants a page was still ~8 ms.
 */
export const EXPORT_GRANTS_PER_PAGE = 100;

/** Where a directory export page resumes: after an organization, or after one of the user's grants inside it. */
export interface PersonalDataCursor {
  readonly organizationId: string;
  readonly grant?: GrantRef;
}

const LEVELS: readonly unknown[] = ['organization', 'folder', 'document'];

/** An export token's directory cursor, [apiKey, organizationId] or [apiKey, organizationId, level, resourceId]. */
export function personalDataCursor(cursor: ReadonlyArray<string | number>): PersonalDataCursor {
  const [, organizationId, level, resourceId] = cursor;
  if (typeof organizationId !== 'string') throw invalidArgument('data.pageToken is not a page token of this export');
  if (cursor.length === 2) return { organizationId };
  if (cursor.length !== 4 || !LEVELS.includes(level) || typeof resourceId !== 'string') throw invalidArgument('data.pageToken is not a page token of this export');
  return { organizationId, grant: { level: level as GrantRef['level'], resourceId } };
}

/** What the directory holds about one user in one organization (GDPR export). */
export interface PersonalData {
  organizationId: string;
  profile?: Record<string, unknown>;
  grants: Array<GrantRef & GrantRecord>;
  groups: string[];
}

export class Users {
  constructor(
    private readonly db: DirectoryDb,
    private readonly grants: Grants,
    private readonly organizations: Organizations,
    private readonly folders: Folders,
    private readonly documents: Documents,
    private readonly groups: Groups,
    private readonly now: () => number,
  ) {}

  /**
   * Adds or re-adds users at the scope: the profile fields sent are merged, the role kept unless one is sent (default
   * editor). In bounded writes (DirectoryDb.writeEach), each making sure of the scope (organization, folder, document).
   */
  async add(apiKey: string, scope: UserScope, users: readonly UserInput[], options: { createFolder?: boolean } = {}): Promise<BulkMap> {
    const ref = grantRef(scope);
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(users, (user) => user.userId, 'userId');
    await this.db.writeEach(
      items,
      (input) => {
        const user = { kind: 'user', id: input.userId } as const;
        const existing = this.grants.get(apiKey, scope.organizationId, ref, user);
        this.saveProfile(apiKey, scope.organizationId, input);
        this.grants.put(apiKey, scope.organizationId, ref, user, {
          accessRole: input.accessRole ?? existing?.accessRole ?? 'editor',
          grantedAt: this.now(),
        });
        results.ok(input.userId, 'User added.');
      },
      () => this.prepareScope(apiKey, scope, options.createFolder === true),
    );
    return results.toJSON();
  }

  async update(apiKey: string, scope: UserScope, users: readonly UserInput[]): Promise<BulkMap> {
    const ref = grantRef(scope);
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(users, (user) => user.userId, 'userId');
    await this.db.writeEach(items, (input) => {
      results.attempt(input.userId, () => {
        const user = { kind: 'user', id: input.userId } as const;
        const grant = this.grants.get(apiKey, scope.organizationId, ref, user);
        if (grant === undefined) throw new ItemFailure('not-found', 'User does not exist.');
        this.saveProfile(apiKey, scope.organizationId, input);
        if (input.accessRole !== undefined) this.grants.put(apiKey, scope.organizationId, ref, user, { ...grant, accessRole: input.accessRole });
        return 'User updated.';
      });
    });
    return results.toJSON();
  }

  /**
   * At a folder or document, removes the user's grant there (in bounded writes, DirectoryDb.writeEach). At the organization,
   * removes the user from it entirely: profile, every grant in the organization and every group membership, user
   * after user, in writes of at most WRITE_BATCH removals (a user may hold a grant on each of 50,000 documents: one
   * transaction held the event loop a quarter of a second), users with a few each sharing a write. Group memberships
   * and the broadest grants go first, so access narrows as it goes; the profile goes in the user's last write with
   * whatever was granted meanwhile, so the user stays known (and a delete retried after a crash finishes) until then.
   */
  async delete(apiKey: string, scope: UserScope, userIds: readonly string[]): Promise<BulkMap> {
    const ref = grantRef(scope);
    const { organizationId } = scope;
    const results = new BulkResults((id) => ({ id }));
    const ids = results.unique(userIds, (id) => id, 'userId');
    if (ref.level !== 'organization') {
      await this.db.writeEach(ids, (userId) => {
        if (this.grants.remove(apiKey, organizationId, ref, { kind: 'user', id: userId })) results.ok(userId, 'User removed.');
        else results.fail(userId, 'not-found', 'User does not exist.');
      });
      return results.toJSON();
    }
    const known = ids.filter((userId) => {
      const user = { kind: 'user', id: userId } as const;
      const found =
        this.db.has(keys.user(apiKey, organizationId, userId)) ||
        this.grants.holdsAny(apiKey, organizationId, user) ||
        this.groups.groupsOf(apiKey, organizationId, userId).length > 0;
      if (!found) results.fail(userId, 'not-found', 'User does not exist.');
      return found;
    });
    let at = 0;
    while (at < known.length) at = await this.db.write(() => this.removeSomeFromOrganization(apiKey, organizationId, known, at, results));
    return results.toJSON();
  }

  /**
   * Users holding a live grant at the scope, in user id order, optionally filtered by ids or group membership. With
   * groups it walks the groups' members, not the scope's grants (src/tenant/directory/user-filters.ts).
   */
  async get(apiKey: string, scope: UserScope, query: UserQuery): Promise<Page<UserView>> {
    const ref = grantRef(scope);
    const { organizationId } = scope;
    const now = this.now();
    const viewOf = (userId: string, grant: GrantRecord | undefined): UserView[] =>
      grant === undefined || (grant.expiresAt !== undefined && grant.expiresAt <= now) ? [] : [this.view(apiKey, organizationId, userId, grant)];
    if (query.userIds !== undefined) {
      return { rows: query.userIds.flatMap((id) => viewOf(id, this.grants.get(apiKey, organizationId, ref, { kind: 'user', id }))) };
    }
    const groupIds = query.organizationUserGroupIds;
    const scopeName = `users:${organizationId}:${ref.level}:${ref.resourceId}:${(groupIds ?? []).join(',')}`;
    let after = query.pageToken === undefined ? undefined : String(decodePageToken(query.pageToken, scopeName));
    const nextPage = (rows: UserView[], more: boolean): Page<UserView> => {
      const lastRow = rows.at(-1);
      return more && lastRow !== undefined ? { rows, nextPageToken: encodePageToken(scopeName, lastRow.userId) } : { rows };
    };
    if (groupIds !== undefined) {
      const found = await groupMembersAt(this.db, this.grants, { apiKey, organizationId, ref, now }, groupIds, { ...(after === undefined ? {} : { after }), pageSize: query.pageSize }, (userId, grant) =>
        this.view(apiKey, organizationId, userId, grant),
      );
      return nextPage(found.rows, found.more);
    }
    const rows: UserView[] = [];
    let more = false;
    for (;;) {
      const chunk = this.grants.usersOn(apiKey, organizationId, ref, { limit: SCAN_CHUNK, ...(after === undefined ? {} : { afterUserId: after }) });
      for (const { userId, grant } of chunk) {
        const found = viewOf(userId, grant);
        if (found.length === 0) continue;
        if (rows.length === query.pageSize) {
          more = true;
          break;
        }
        rows.push(...found);
      }
      const last = chunk.at(-1);
      if (more || last === undefined || chunk.length < SCAN_CHUNK) break;
      after = last.userId;
    }
    return nextPage(rows, more);
  }

  /**
   * Users holding a live grant on any document of the organization (`users/get` with `allDocuments`), one row per
   * (document, user), in document then user id order, optionally only the given users (then read through their own
   * grant index rows, src/tenant/directory/user-filters.ts). A full page carries a token when any user grant on a
   * document follows its last row (a later page may then be empty).
   */
  async onDocuments(apiKey: string, organizationId: string, query: { pageSize: number; pageToken?: string; userIds?: readonly string[] }): Promise<Page<UserView & { documentId: string }>> {
    const now = this.now();
    const scopeName = `users:${organizationId}:all-documents:${(query.userIds ?? []).join(',')}`;
    let after: [string, string] | undefined;
    if (query.pageToken !== undefined) {
      const position: unknown = JSON.parse(String(decodePageToken(query.pageToken, scopeName)));
      if (!Array.isArray(position) || position.length !== 2) throw invalidArgument('data.pageToken is not a page token of this listing');
      after = [String(position[0]), String(position[1])];
    }
    const fullPage = (rows: Array<UserView & { documentId: string }>): Page<UserView & { documentId: string }> => {
      const last = rows.at(-1);
      if (last === undefined || rows.length < query.pageSize) return { rows };
      const more = this.grants.userGrantsOnDocuments(apiKey, organizationId, { limit: 1, after: [last.documentId, last.userId] }).length > 0;
      return more ? { rows, nextPageToken: encodePageToken(scopeName, JSON.stringify([last.documentId, last.userId])) } : { rows };
    };
    if (query.userIds !== undefined) {
      const page = { ...(after === undefined ? {} : { after }), pageSize: query.pageSize };
      return fullPage(await namedUsersOnDocuments(this.db, this.grants, { apiKey, organizationId, now }, query.userIds, page, (userId, grant) => this.view(apiKey, organizationId, userId, grant)));
    }
    const rows: Array<UserView & { documentId: string }> = [];
    for (;;) {
      const chunk = this.grants.userGrantsOnDocuments(apiKey, organizationId, { limit: SCAN_CHUNK, ...(after === undefined ? {} : { after }) });
      for (const { documentId, userId, grant } of chunk) {
        after = [documentId, userId];
        if (grant.expiresAt !== undefined && grant.expiresAt <= now) continue;
        rows.push({ ...this.view(apiKey, organizationId, userId, grant), documentId });
        if (rows.length === query.pageSize) return fullPage(rows);
      }
      if (chunk.length < SCAN_CHUNK) return { rows };
    }
  }

  /**
   * Everything the directory holds about one user, organization by organization (GDPR export), in organization id
   * order after `after`, at most `limit` items (organizations without any are left out) and `maxGrants` grants over
   * them, with the cursor of the last item when more follow. An organization with more grants than the page has room
   * for is split: the page ends inside it, and the next page's first item holds its next grants (no profile, no
   * groups: those came with its first item). Reads ORG_CHUNK organizations between turns of the event loop.
   */
  async personalData(apiKey: string, userId: string, options: { after?: PersonalDataCursor; limit: number; maxGrants?: number }): Promise<{ items: PersonalData[]; next?: PersonalDataCursor }> {
    const prefix = keys.orgs(apiKey);
    const items: PersonalData[] = [];
    let room = options.maxGrants ?? EXPORT_GRANTS_PER_PAGE;
    /** Adds an organization's part; answers the cursor inside it when its grants did not fit. */
    const add = (organizationId: string, afterGrant: GrantRef | undefined): PersonalDataCursor | undefined => {
      const part = this.personalDataIn(apiKey, organizationId, userId, afterGrant, room);
      if (part.entry === undefined) return undefined;
      items.push(part.entry);
      room -= part.entry.grants.length;
      const last = part.entry.grants.at(-1);
      return part.more && last !== undefined ? { organizationId, grant: { level: last.level, resourceId: last.resourceId } } : undefined;
    };
    let after = options.after?.organizationId;
    const resumed = options.after?.grant;
    if (after !== undefined && resumed !== undefined) {
      const inside = add(after, resumed);
      if (inside !== undefined) return { items, next: inside };
    }
    for (;;) {
      const ids = this.db.lastElements(prefix, { ...(after === undefined ? {} : { after: [...prefix, after] }), limit: ORG_CHUNK });
      for (const organizationId of ids) {
        const last = items.at(-1);
        if ((items.length === options.limit || room <= 0) && last !== undefined) {
          // The page is full: a cursor only if another item follows.
          if (this.personalDataIn(apiKey, organizationId, userId, undefined, 0).entry === undefined) continue;
          return { items, next: { organizationId: last.organizationId } };
        }
        const inside = add(organizationId, undefined);
        if (inside !== undefined) return { items, next: inside };
      }
      if (ids.length < ORG_CHUNK) return { items };
      after = ids.at(-1);
      await nextTurn();
    }
  }

  /**
   * One organization's part of the export: its grants after `afterGrant` (all of them when undefined, with the profile
   * and groups), at most `maxGrants`, and whether more follow. `entry` undefined: nothing (more) there.
   */
  private personalDataIn(apiKey: string, organizationId: string, userId: string, afterGrant: GrantRef | undefined, maxGrants: number): { entry?: PersonalData; more: boolean } {
    const user = { kind: 'user', id: userId } as const;
    const refs = this.grants.ofPrincipal(apiKey, organizationId, user, { ...(afterGrant === undefined ? {} : { after: afterGrant }), limit: maxGrants + 1 });
    const more = refs.length > maxGrants;
    const grants = refs.slice(0, maxGrants).flatMap((ref) => {
      const grant = this.grants.get(apiKey, organizationId, ref, user);
      return grant === undefined ? [] : [{ ...ref, ...grant }];
    });
    if (afterGrant !== undefined) return grants.length === 0 ? { more: false } : { entry: { organizationId, grants, groups: [] }, more };
    const profile = this.profile(apiKey, organizationId, userId);
    const groups = this.groups.groupsOf(apiKey, organizationId, userId);
    if (profile === undefined && refs.length === 0 && groups.length === 0) return { more: false };
    return { entry: { organizationId, ...(profile === undefined ? {} : { profile: { ...profile.profile, createdAt: profile.createdAt, lastUpdated: profile.lastUpdated } }), grants, groups }, more };
  }

  /**
   * Only inside a write: removes the users from `at` on from the organization, at most WRITE_BATCH memberships and
   * grants in all, starting no further user once ITEMS_PER_WRITE removals are made (one write for a call's 1,000 users
   * with a few grants each, not one each: 0.6–2.5 s of commits); answers where the next write starts (a user whose
   * removal did not fit is started again there).
   */
  private removeSomeFromOrganization(apiKey: string, organizationId: string, userIds: readonly string[], at: number, results: BulkResults): number {
    let used = 0;
    for (let next = at; next < userIds.length; next++) {
      if (next > at && used >= ITEMS_PER_WRITE) return next;
      const userId = userIds[next] as string;
      const user = { kind: 'user', id: userId } as const;
      used += this.groups.removeUserFromSome(apiKey, organizationId, userId, WRITE_BATCH - used);
      used += this.grants.removePrincipalSome(apiKey, organizationId, user, WRITE_BATCH - used);
      if (used >= WRITE_BATCH) return next;
      this.db.remove(keys.user(apiKey, organizationId, userId));
      results.ok(userId, 'User removed.');
      used += 1;
    }
    return userIds.length;
  }

  profile(apiKey: string, organizationId: string, userId: string): UserProfileRecord | undefined {
    return this.db.get<UserProfileRecord>(keys.user(apiKey, organizationId, userId));
  }

  /** Only inside a write, before its other writes: checks the folder, registers the organization and document (NOT_FOUND for the call when the folder is missing and not to be created). */
  private prepareScope(apiKey: string, scope: UserScope, createFolder: boolean): void {
    const { organizationId, folderId, documentId } = scope;
    if (folderId !== undefined && !createFolder && this.folders.find(apiKey, organizationId, folderId) === undefined) {
      throw notFound(`data.folderId: folder "${folderId}" does not exist in organization "${organizationId}" (send createFolder: true to create it)`);
    }
    this.organizations.ensure(apiKey, organizationId);
    if (folderId !== undefined && this.folders.find(apiKey, organizationId, folderId) === undefined) {
      this.folders.addOne(apiKey, organizationId, { folderId });
    }
    if (documentId !== undefined) this.documents.ensure(apiKey, organizationId, documentId);
  }

  private saveProfile(apiKey: string, organizationId: string, input: UserInput): void {
    const key = keys.user(apiKey, organizationId, input.userId);
    const existing = this.db.get<UserProfileRecord>(key);
    const now = this.now();
    const fields = metadataOf(input, KNOWN);
    if (existing !== undefined && Object.keys(fields).length === 0) return;
    this.db.put(key, {
      userId: input.userId,
      profile: { ...existing?.profile, ...fields },
      createdAt: existing?.createdAt ?? now,
      lastUpdated: now,
    } satisfies UserProfileRecord);
  }

  private view(apiKey: string, organizationId: string, userId: string, grant: GrantRecord): UserView {
    const profile = this.profile(apiKey, organizationId, userId)?.profile ?? {};
    return { ...profile, userId, accessRole: grant.accessRole, ...(grant.expiresAt === undefined ? {} : { expiresAt: grant.expiresAt }) };
  }
}

/** The grant level a users operation works on; INVALID_ARGUMENT when both a folder and a document are named. */
export function grantRef(scope: UserScope): GrantRef {
  if (scope.documentId !== undefined && scope.folderId !== undefined) {
    throw invalidArgument('data.documentId and data.folderId cannot both be set: users belong to one level at a time');
  }
  if (scope.documentId !== undefined) return { level: 'document', resourceId: scope.documentId };
  if (scope.folderId !== undefined) return { level: 'folder', resourceId: scope.folderId };
  return { level: 'organization', resourceId: scope.organizationId };
}
