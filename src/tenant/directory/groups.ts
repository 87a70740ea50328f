// Owns organization user groups: creating groups and adding or removing their members (spec 2.10, 4.12, 4.17).
import { notFound } from '../../errors.js';
import { BulkResults, ItemFailure, type BulkMap } from './bulk.js';
import { ITEMS_PER_WRITE, type DirectoryDb } from './db.js';
import type { Organizations } from './organizations.js';
import { keys, type GroupRecord } from './records.js';

export class Groups {
  constructor(
    private readonly db: DirectoryDb,
    private readonly organizations: Organizations,
    private readonly now: () => number,
  ) {}

  find(apiKey: string, organizationId: string, groupId: string): GroupRecord | undefined {
    return this.db.get<GroupRecord>(keys.group(apiKey, organizationId, groupId));
  }

  /** Ids of the groups the user belongs to in the organization. */
  groupsOf(apiKey: string, organizationId: string, userId: string): string[] {
    return this.db.lastElements(keys.userGroups(apiKey, organizationId, userId));
  }

  isMember(apiKey: string, organizationId: string, groupId: string, userId: string): boolean {
    return this.db.has(keys.member(apiKey, organizationId, groupId, userId));
  }

  async add(apiKey: string, organizationId: string, groups: ReadonlyArray<{ groupId: string; groupName?: string }>): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(groups, (group) => group.groupId, 'groupId');
    await this.db.writeEach(
      items,
      (input) => {
        results.attempt(input.groupId, () => {
          if (this.find(apiKey, organizationId, input.groupId) !== undefined) {
            throw new ItemFailure('already-exists', `user group "${input.groupId}" already exists`);
          }
          const record: GroupRecord = { organizationUserGroupId: input.groupId, groupName: input.groupName ?? input.groupId, createdAt: this.now() };
          this.db.put(keys.group(apiKey, organizationId, input.groupId), record);
          return 'User group added.';
        });
      },
      () => this.organizations.ensure(apiKey, organizationId),
    );
    return results.toJSON();
  }

  /**
   * Adding a member twice is not an error: membership is a set, so the second add changes nothing. In bounded writes
   * (DirectoryDb.writeEach), each checking the group is still there (NOT_FOUND for the call when it is not).
   */
  async addUsers(apiKey: string, organizationId: string, groupId: string, userIds: readonly string[]): Promise<BulkMap> {
    this.requireGroup(apiKey, organizationId, groupId);
    const results = new BulkResults(() => ({ organizationUserGroupId: groupId }));
    const ids = results.unique(userIds, (id) => id, 'userId');
    await this.db.writeEach(
      ids,
      (userId) => {
        if (this.isMember(apiKey, organizationId, groupId, userId)) {
          results.ok(userId, 'User is already in the group.');
          return false;
        }
        this.db.put(keys.member(apiKey, organizationId, groupId, userId), this.now());
        this.db.put(keys.userGroup(apiKey, organizationId, userId, groupId), true);
        results.ok(userId, 'User added to the group.');
        return true;
      },
      () => this.requireGroup(apiKey, organizationId, groupId),
    );
    return results.toJSON();
  }

  /**
   * Removes the listed members, or with `deleteAll` every member; a listed user who is not a member fails alone. In
   * bounded writes as addUsers; `deleteAll` takes ITEMS_PER_WRITE members a write until none is left, so a member added
   * meanwhile goes too (one write for a group of 10,000 held every workspace's writes for 29–61 ms).
   */
  async deleteUsers(apiKey: string, organizationId: string, groupId: string, target: { userIds?: readonly string[]; deleteAll: boolean }): Promise<BulkMap> {
    this.requireGroup(apiKey, organizationId, groupId);
    const results = new BulkResults(() => ({ organizationUserGroupId: groupId }));
    const remove = (userId: string): boolean => {
      if (!this.isMember(apiKey, organizationId, groupId, userId)) {
        results.fail(userId, 'not-found', 'User is not in the group.');
        return false;
      }
      this.removeMember(apiKey, organizationId, groupId, userId);
      results.ok(userId, 'User removed from the group.');
      return true;
    };
    if (!target.deleteAll) {
      await this.db.writeEach(results.unique(target.userIds ?? [], (id) => id, 'userId'), remove, () => this.requireGroup(apiKey, organizationId, groupId));
      return results.toJSON();
    }
    for (;;) {
      const removed = await this.db.write(() => {
        this.requireGroup(apiKey, organizationId, groupId);
        const ids = this.db.lastElements(keys.members(apiKey, organizationId, groupId), { limit: ITEMS_PER_WRITE });
        for (const userId of ids) remove(userId);
        return ids.length;
      });
      if (removed < ITEMS_PER_WRITE) return results.toJSON();
    }
  }

  /** Only inside a write. */
  removeMember(apiKey: string, organizationId: string, groupId: string, userId: string): void {
    this.db.remove(keys.member(apiKey, organizationId, groupId, userId));
    this.db.remove(keys.userGroup(apiKey, organizationId, userId, groupId));
  }

  /** Only inside a write: takes the user out of at most `limit` of their groups in the organization; answers how many. */
  removeUserFromSome(apiKey: string, organizationId: string, userId: string, limit: number): number {
    const groupIds = this.db.lastElements(keys.userGroups(apiKey, organizationId, userId), { limit });
    for (const groupId of groupIds) this.removeMember(apiKey, organizationId, groupId, userId);
    return groupIds.length;
  }

  /** Exposed for grants on groups: a grant may only name a group that exists. */
  requireGroup(apiKey: string, organizationId: string, groupId: string): GroupRecord {
    const group = this.find(apiKey, organizationId, groupId);
    if (group === undefined) {
      throw notFound(`data.organizationUserGroupId: user group "${groupId}" does not exist in organization "${organizationId}"`);
    }
    return group;
  }
}
