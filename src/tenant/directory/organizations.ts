// Owns organizations: add, paged get, update, disable state and delete (which removes everything the organization holds).
import { deleteOrganizationData, whileDeleting, type DocumentDataOwner } from './data-owners.js';
import { BulkResults, ItemFailure, type BulkMap } from './bulk.js';
import type { DirectoryDb } from './db.js';
import { decodePageToken, encodePageToken, type Page } from './paging.js';
import { ORG_SCOPED_KINDS, keys, metadataOf, type OrganizationRecord } from './records.js';

export interface OrganizationInput {
  organizationId: string;
  organizationName?: string;
  [metadata: string]: unknown;
}

export interface OrganizationView {
  id: string;
  organizationName: string;
  disabled: boolean;
  createdAt: number;
  lastUpdated: number;
  [metadata: string]: unknown;
}

const KNOWN = ['organizationId', 'organizationName'];

export class Organizations {
  constructor(
    private readonly db: DirectoryDb,
    private readonly owners: readonly DocumentDataOwner[],
    private readonly now: () => number,
  ) {}

  find(apiKey: string, organizationId: string): OrganizationRecord | undefined {
    return this.db.get<OrganizationRecord>(keys.org(apiKey, organizationId));
  }

  /** Only inside a write: the organization, created with its id as name when missing (add operations name orgs implicitly). */
  ensure(apiKey: string, organizationId: string): OrganizationRecord {
    const existing = this.find(apiKey, organizationId);
    if (existing !== undefined) return existing;
    const now = this.now();
    const record: OrganizationRecord = { organizationId, organizationName: organizationId, disabled: false, metadata: {}, createdAt: now, lastUpdated: now };
    this.db.put(keys.org(apiKey, organizationId), record);
    return record;
  }

  /** In bounded writes (DirectoryDb.writeEach), as update and setDisabled. */
  async add(apiKey: string, organizations: readonly OrganizationInput[]): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(organizations, (org) => org.organizationId, 'organizationId');
    await this.db.writeEach(items, (input) => {
      results.attempt(input.organizationId, () => {
        if (this.find(apiKey, input.organizationId) !== undefined) {
          throw new ItemFailure('already-exists', `organization "${input.organizationId}" already exists; use update to change it`);
        }
        const now = this.now();
        this.db.put(keys.org(apiKey, input.organizationId), {
          organizationId: input.organizationId,
          organizationName: input.organizationName ?? input.organizationId,
          disabled: false,
          metadata: metadataOf(input, KNOWN),
          createdAt: now,
          lastUpdated: now,
        } satisfies OrganizationRecord);
        return 'Added Successfully';
      });
    });
    return results.toJSON();
  }

  /** Organizations by id (in the order asked, unknown ids left out) or all of them in id order, a page at a time. */
  get(apiKey: string, filter: { organizationIds?: readonly string[]; pageSize: number; pageToken?: string }): Page<OrganizationView> {
    if (filter.organizationIds !== undefined) {
      const rows = filter.organizationIds.flatMap((id) => {
        const record = this.find(apiKey, id);
        return record === undefined ? [] : [view(record)];
      });
      return { rows };
    }
    const prefix = keys.orgs(apiKey);
    const after = filter.pageToken === undefined ? undefined : String(decodePageToken(filter.pageToken, 'organizations'));
    const found = this.db.scan<OrganizationRecord>(prefix, {
      ...(after === undefined ? {} : { after: [...prefix, after] }),
      limit: filter.pageSize + 1,
    });
    const rows = found.slice(0, filter.pageSize).map(({ value }) => view(value));
    const last = rows.at(-1);
    return found.length > filter.pageSize && last !== undefined ? { rows, nextPageToken: encodePageToken('organizations', last.id) } : { rows };
  }

  async update(apiKey: string, organizations: readonly OrganizationInput[]): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const items = results.unique(organizations, (org) => org.organizationId, 'organizationId');
    await this.db.writeEach(items, (input) => {
      results.attempt(input.organizationId, () => {
        const record = this.find(apiKey, input.organizationId);
        if (record === undefined) throw new ItemFailure('not-found', 'Organization does not exist');
        this.db.put(keys.org(apiKey, input.organizationId), {
          ...record,
          organizationName: input.organizationName ?? record.organizationName,
          metadata: { ...record.metadata, ...metadataOf(input, KNOWN) },
          lastUpdated: this.now(),
        } satisfies OrganizationRecord);
        return 'Updated Successfully';
      });
    });
    return results.toJSON();
  }

  /** Disabling blocks reading and writing for everyone; a missing organization is created in that state (upstream). */
  async setDisabled(apiKey: string, organizationIds: readonly string[], disabled: boolean): Promise<BulkMap> {
    const results = new BulkResults(() => ({ disabled }));
    const ids = results.unique(organizationIds, (id) => id, 'organizationId');
    await this.db.writeEach(ids, (id) => {
      const record = this.ensure(apiKey, id);
      this.db.put(keys.org(apiKey, id), { ...record, disabled, lastUpdated: this.now() } satisfies OrganizationRecord);
      results.ok(id, disabled ? 'Organization disabled.' : 'Organization enabled.');
    });
    return results.toJSON();
  }

  /**
   * Deletes each organization with its folders, documents, users, groups and grants, and the document data
   * other modules hold. Data owners run first, then the organization's rows go kind by kind in batches of bounded
   * transactions (an organization may hold 100,000 documents: one transaction would hold the event loop for all of
   * them), and the organization entry last, with whatever was written under it meanwhile. A crash part-way leaves
   * the entry in place, so the retried delete finishes the job. Every document of the organizations, loaded or not, is
   * held until the entries are gone (`whileDeleting`: a write or sync connection meanwhile waits for the end).
   */
  async delete(apiKey: string, organizationIds: readonly string[]): Promise<BulkMap> {
    const results = new BulkResults((id) => ({ id }));
    const ids = results.unique(organizationIds, (id) => id, 'organizationId');
    const organizations = ids.map((organizationId) => ({ apiKey, organizationId }));
    return whileDeleting(this.owners, { organizations }, () => this.deleteHeld(apiKey, ids, results));
  }

  private async deleteHeld(apiKey: string, ids: readonly string[], results: BulkResults): Promise<BulkMap> {
    for (const id of ids) {
      if (this.find(apiKey, id) === undefined) continue;
      await deleteOrganizationData(this.owners, apiKey, id);
      for (const kind of ORG_SCOPED_KINDS) await this.db.removePrefixInBatches([apiKey, kind, id]);
    }
    await this.db.write(() => {
      for (const id of ids) {
        if (this.find(apiKey, id) === undefined) {
          results.fail(id, 'not-found', 'Organization does not exist');
          continue;
        }
        for (const kind of ORG_SCOPED_KINDS) this.db.removePrefix([apiKey, kind, id]);
        this.db.remove(keys.org(apiKey, id));
        results.ok(id, 'Deleted Successfully');
      }
    });
    return results.toJSON();
  }
}

function view(record: OrganizationRecord): OrganizationView {
  return {
    ...record.metadata,
    id: record.organizationId,
    organizationName: record.organizationName,
    disabled: record.disabled,
    createdAt: record.createdAt,
    lastUpdated: record.lastUpdated,
  };
}
