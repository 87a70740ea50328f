// Owns stored grants (a role for a user or group on an organization, folder or document) and their reverse index.
import { ITEMS_PER_WRITE, type DirectoryDb } from './db.js';
import { keys, type DirKey, type GrantRecord, type Level, type Principal } from './records.js';

export interface GrantRef {
  readonly level: Level;
  readonly resourceId: string;
}

export class Grants {
  constructor(private readonly db: DirectoryDb) {}

  get(apiKey: string, organizationId: string, ref: GrantRef, principal: Principal): GrantRecord | undefined {
    return this.db.get<GrantRecord>(keys.grant(apiKey, organizationId, ref.level, ref.resourceId, principal));
  }

  /** A grant counts while it has no expiry or its expiry is in the future. */
  live(apiKey: string, organizationId: string, ref: GrantRef, principal: Principal, now: number): GrantRecord | undefined {
    const grant = this.get(apiKey, organizationId, ref, principal);
    return grant !== undefined && (grant.expiresAt === undefined || grant.expiresAt > now) ? grant : undefined;
  }

  /** Only inside a write. Replaces any grant the principal had on that resource. */
  put(apiKey: string, organizationId: string, ref: GrantRef, principal: Principal, grant: GrantRecord): void {
    this.db.put(keys.grant(apiKey, organizationId, ref.level, ref.resourceId, principal), grant);
    this.db.put(keys.principalGrant(apiKey, organizationId, principal, ref.level, ref.resourceId), true);
  }

  /** Only inside a write. Returns whether there was a grant to remove. */
  remove(apiKey: string, organizationId: string, ref: GrantRef, principal: Principal): boolean {
    const key = keys.grant(apiKey, organizationId, ref.level, ref.resourceId, principal);
    if (!this.db.has(key)) return false;
    this.db.remove(key);
    this.db.remove(keys.principalGrant(apiKey, organizationId, principal, ref.level, ref.resourceId));
    return true;
  }

  /** Only inside a write. Drops every grant on a resource (it is being deleted). */
  removeResource(apiKey: string, organizationId: string, ref: GrantRef): void {
    this.removeResourceSome(apiKey, organizationId, ref);
  }

  /** Only inside a write. Moves every grant on `from` to `to` (a document re-keyed). */
  moveResource(apiKey: string, organizationId: string, from: GrantRef, to: GrantRef): void {
    this.removeResourceSome(apiKey, organizationId, from, undefined, to);
  }

  /**
   * Drops every grant on the resources (they are being deleted), ITEMS_PER_WRITE grants to a committed write, one write
   * after another (not inside a write): one document may hold a grant for each of 10,000 users, and one write for
   * them held every workspace's writes for 36–53 ms. Access narrows as it goes; grants made meanwhile go with their
   * resource's own removal. The resources without a grant are left out first, outside the writes: a folder delete
   * names every folder of its subtree, and a write checking 5,000 of them took ~14 ms.
   */
  async removeResourcesInWrites(apiKey: string, organizationId: string, resources: readonly GrantRef[]): Promise<void> {
    const refs = resources.filter((ref) => this.db.scan<GrantRecord>(keys.resourceGrants(apiKey, organizationId, ref.level, ref.resourceId), { limit: 1 }).length > 0);
    let at = 0;
    while (at < refs.length) {
      at = await this.db.write(() => {
        let room = ITEMS_PER_WRITE;
        for (let next = at; next < refs.length; next++) {
          room -= this.removeResourceSome(apiKey, organizationId, refs[next] as GrantRef, room);
          // Full: this resource may hold more, so the next write starts at it.
          if (room === 0) return next;
        }
        return refs.length;
      });
    }
  }

  /**
   * Moves every grant on `from` to `to` (a document migration), ITEMS_PER_WRITE grants to a committed write, one write
   * after another (not inside a write); answers how many moved. Each grant moves whole in its write (both of its rows
   * written under `to`, both removed under `from`), so a crash between writes leaves each on one side and a re-run
   * moves the rest. A migration of a document with 1,000 grants and no other rows held every workspace's writes for
   * 14–26 ms in one write.
   */
  async moveResourceInWrites(apiKey: string, organizationId: string, from: GrantRef, to: GrantRef): Promise<number> {
    let moved = 0;
    for (;;) {
      const taken = await this.db.write(() => this.removeResourceSome(apiKey, organizationId, from, ITEMS_PER_WRITE, to));
      moved += taken;
      if (taken < ITEMS_PER_WRITE) return moved;
    }
  }

  /**
   * Only inside a write. Drops at most `limit` of the grants on a resource (all without one), each first written under
   * `moveTo` when given; answers how many.
   */
  private removeResourceSome(apiKey: string, organizationId: string, ref: GrantRef, limit?: number, moveTo?: GrantRef): number {
    const found = this.db.scan<GrantRecord>(keys.resourceGrants(apiKey, organizationId, ref.level, ref.resourceId), limit === undefined ? {} : { limit });
    for (const { key, value } of found) {
      const kind = key[5];
      const id = key[6];
      if ((kind === 'user' || kind === 'group') && typeof id === 'string') {
        if (moveTo !== undefined) this.put(apiKey, organizationId, moveTo, { kind, id }, value);
        this.db.remove(keys.principalGrant(apiKey, organizationId, { kind, id }, ref.level, ref.resourceId));
      }
      this.db.remove(key);
    }
    return found.length;
  }

  /**
   * Only inside a write. Drops at most `limit` of the grants a principal holds in the organization, the broadest
   * first (organization, then folders, then documents: access narrows as a batched removal goes on); answers how
   * many went. Both rows of each go, so an index row without its grant cannot stall a caller looping until none is left.
   */
  removePrincipalSome(apiKey: string, organizationId: string, principal: Principal, limit: number): number {
    let removed = 0;
    for (const level of ['organization', 'folder', 'document'] as const) {
      if (removed >= limit) break;
      const prefix = [...keys.principalGrants(apiKey, organizationId, principal), level];
      for (const { key } of this.db.scan<true>(prefix, { limit: limit - removed })) {
        this.db.remove(keys.grant(apiKey, organizationId, level, String(key[6]), principal));
        this.db.remove(key);
        removed++;
      }
    }
    return removed;
  }

  /** Whether the principal holds any grant in the organization (one row read). */
  holdsAny(apiKey: string, organizationId: string, principal: Principal): boolean {
    return this.db.scan<true>(keys.principalGrants(apiKey, organizationId, principal), { limit: 1 }).length > 0;
  }

  /** The principal's grants in the organization, in (level, resource) order; after `after` and at most `limit` when given. */
  ofPrincipal(apiKey: string, organizationId: string, principal: Principal, options: { after?: GrantRef; limit?: number } = {}): GrantRef[] {
    const prefix = keys.principalGrants(apiKey, organizationId, principal);
    const scan = { ...(options.after === undefined ? {} : { after: [...prefix, options.after.level, options.after.resourceId] }), ...(options.limit === undefined ? {} : { limit: options.limit }) };
    return this.db.scan<true>(prefix, scan).flatMap(({ key }) => {
      const level = key[5];
      const resourceId = key[6];
      return (level === 'organization' || level === 'folder' || level === 'document') && typeof resourceId === 'string'
        ? [{ level, resourceId }]
        : [];
    });
  }

  /** Users holding a grant on the resource, in user id order, after `afterUserId`, at most `limit`. */
  usersOn(
    apiKey: string,
    organizationId: string,
    ref: GrantRef,
    options: { afterUserId?: string; limit?: number } = {},
  ): Array<{ userId: string; grant: GrantRecord }> {
    const prefix = keys.resourceGrants(apiKey, organizationId, ref.level, ref.resourceId, 'user');
    return this.db
      .scan<GrantRecord>(prefix, {
        ...(options.afterUserId === undefined ? {} : { after: [...prefix, options.afterUserId] }),
        ...(options.limit === undefined ? {} : { limit: options.limit }),
      })
      .map(({ key, value }) => ({ userId: String(key[6]), grant: value }));
  }

  /**
   * User grants on every document of the organization, in (document id, user id) order, after `after`, at most
   * `limit` (group grants are skipped and do not count).
   */
  userGrantsOnDocuments(
    apiKey: string,
    organizationId: string,
    options: { after?: readonly [string, string]; limit: number },
  ): Array<{ documentId: string; userId: string; grant: GrantRecord }> {
    const prefix = [apiKey, 'grant', organizationId, 'document'];
    const found: Array<{ documentId: string; userId: string; grant: GrantRecord }> = [];
    let after: DirKey | undefined = options.after === undefined ? undefined : [...prefix, options.after[0], 'user', options.after[1]];
    while (found.length < options.limit) {
      const chunk = this.db.scan<GrantRecord>(prefix, { limit: options.limit, ...(after === undefined ? {} : { after }) });
      for (const { key, value } of chunk) {
        if (key[5] === 'user' && found.length < options.limit) found.push({ documentId: String(key[4]), userId: String(key[6]), grant: value });
      }
      const last = chunk.at(-1);
      if (last === undefined || chunk.length < options.limit) break;
      after = last.key;
    }
    return found;
  }
}
