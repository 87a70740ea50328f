// Owns the filtered users listings that read only the index rows of what they may return: group members, named users.
import { keyOrder, walkMerged } from '../../store/merged-scan.js';
import type { DirectoryDb } from './db.js';
import type { GrantRef, Grants } from './grants.js';
import { keys, type DirKey, type GrantRecord } from './records.js';

/** Turns a user's live grant into the row a listing answers (profile and role). */
export type RowOf<R> = (userId: string, grant: GrantRecord) => R;

export interface FilterPage<R> {
  readonly rows: R[];
  /** Another row of the same listing follows the page. */
  readonly more: boolean;
}

function lastElements(found: Iterable<DirKey>): Generator<string> {
  return (function* () {
    for (const key of found) yield String(key[key.length - 1]);
  })();
}

/**
 * Users holding a live grant at `ref` who belong to any of `groupIds`, in user id order, after `after`, at most
 * `pageSize`. Walks the groups' `member` rows merged in key order (a user in two groups once) and reads one grant per
 * member: its cost follows the groups' size, not the number of users granted at the scope (an organization may hold
 * 50,000 while a group holds 3). The order is the one a walk of the scope's grant rows gave: both are user id keys.
 */
export async function groupMembersAt<R>(
  db: DirectoryDb,
  grants: Grants,
  at: { apiKey: string; organizationId: string; ref: GrantRef; now: number },
  groupIds: readonly string[],
  page: { after?: string; pageSize: number },
  rowOf: RowOf<R>,
): Promise<FilterPage<R>> {
  const { apiKey, organizationId, ref, now } = at;
  const rows: R[] = [];
  let more = false;
  await walkMerged<string>(
    (from) =>
      [...new Set(groupIds)].map((groupId) => {
        const prefix = keys.members(apiKey, organizationId, groupId);
        return lastElements(db.keysFrom(prefix, from === undefined ? undefined : { key: [...prefix, from], exclusive: true }));
      }),
    (userId) => userId,
    page.after,
    (userId) => {
      const grant = grants.live(apiKey, organizationId, ref, { kind: 'user', id: userId }, now);
      if (grant === undefined) return true;
      if (rows.length === page.pageSize) {
        more = true;
        return false;
      }
      rows.push(rowOf(userId, grant));
      return true;
    },
  );
  return { rows, more };
}

interface Membership {
  readonly documentId: string;
  readonly userId: string;
}

/**
 * The named users' live grants on documents of the organization, one row per (document, user) in document then user
 * id order (the order of the organization's document grant rows), after the position `after`, at most `pageSize`.
 * Walks each named user's `principal-grant` rows at document level, merged: its cost follows the grants of those
 * users, not every document grant of the organization.
 */
export async function namedUsersOnDocuments<R extends object>(
  db: DirectoryDb,
  grants: Grants,
  at: { apiKey: string; organizationId: string; now: number },
  userIds: readonly string[],
  page: { after?: readonly [string, string]; pageSize: number },
  rowOf: RowOf<R>,
): Promise<Array<R & { documentId: string }>> {
  const { apiKey, organizationId, now } = at;
  const rows: Array<R & { documentId: string }> = [];
  const open = (from: Membership | undefined): Array<Iterable<Membership>> =>
    [...new Set(userIds)].map((userId) => {
      const prefix = [...keys.principalGrants(apiKey, organizationId, { kind: 'user', id: userId }), 'document'];
      // On the position's document, only users after the position's user are still to come.
      const start = from === undefined ? undefined : { key: [...prefix, from.documentId], exclusive: keyOrder(userId, from.userId) <= 0 };
      return (function* () {
        for (const documentId of lastElements(db.keysFrom(prefix, start))) yield { documentId, userId };
      })();
    });
  const after = page.after === undefined ? undefined : { documentId: page.after[0], userId: page.after[1] };
  await walkMerged<Membership>(open, (m) => [m.documentId, m.userId], after, ({ documentId, userId }) => {
    const grant = grants.live(apiKey, organizationId, { level: 'document', resourceId: documentId }, { kind: 'user', id: userId }, now);
    if (grant !== undefined) rows.push({ ...rowOf(userId, grant), documentId });
    return rows.length < page.pageSize;
  });
  return rows;
}
