// Owns document migration (upstream 2.14 documents/migrate): re-keying a document's data and directory entry as a durable job.
import { alreadyExists, CLOSE, invalidArgument, notFound } from '../errors.js';
import type { Store } from '../store/env.js';
import { DB, KEY_END, type DbName } from '../store/keys.js';
import { moveThreadTime, type TimedThread } from '../store/thread-times.js';
import type { JobRecord, Jobs } from '../tenant/jobs.js';
import type { DocumentKey } from '../document-key.js';

export const MIGRATION_JOB = 'document-migration';

export interface MigrationParams {
  readonly organizationId: string;
  readonly documentId: string;
  readonly newDocumentId: string;
}

/** Upstream's migration states: `pending`, `in_progress`, `completed`, `failed`. */
export interface MigrationStatus {
  readonly migrationId: string;
  readonly status: JobRecord['status'];
  readonly error?: string;
}

/** What migration needs of the directory: its document entries, re-keyed inside the same transaction. */
export interface MigrationDirectory {
  knows(apiKey: string, organizationId: string, documentId: string): boolean;
  /** Only inside a write. */
  rekeyInWrite(apiKey: string, organizationId: string, documentId: string, newDocumentId: string): boolean;
}

export interface MigrationDeps {
  readonly store: Store;
  readonly documents: { exclusively<T>(keys: readonly DocumentKey[], code: number, reason: string, work: () => Promise<T>): Promise<T> };
  readonly directory: MigrationDirectory;
  readonly jobs: Jobs;
  /** Every database keyed [apiKey, organizationId, documentId, ...] (src/tenant/directory/data-owners.ts). */
  readonly databases: readonly DbName[];
}

const BINARY: ReadonlySet<DbName> = new Set([DB.docUpdates, DB.docSnapshots]);

export class DocumentMigrations {
  constructor(private readonly deps: MigrationDeps) {
    deps.jobs.register<MigrationParams, { moved: number }>(MIGRATION_JOB, (job) => this.run(job));
  }

  /** Checks the request now (so the caller gets its error), then records the job; answers its id. */
  async start(apiKey: string, params: MigrationParams): Promise<string> {
    if (params.newDocumentId === params.documentId) throw invalidArgument('data.newDocumentId must differ from data.documentId');
    const from = { apiKey, organizationId: params.organizationId, documentId: params.documentId };
    const to = { ...from, documentId: params.newDocumentId };
    if (!this.exists(from)) throw notFound(`data.documentId: document "${params.documentId}" does not exist in organization "${params.organizationId}"`);
    if (this.exists(to)) throw alreadyExists(`data.newDocumentId: document "${params.newDocumentId}" already exists in organization "${params.organizationId}"`);
    const job = await this.deps.jobs.submit(apiKey, MIGRATION_JOB, params);
    return job.jobId;
  }

  status(apiKey: string, migrationId: string): MigrationStatus {
    const job = this.deps.jobs.get(apiKey, migrationId, 'data.migrationId');
    if (job.kind !== MIGRATION_JOB) throw notFound(`data.migrationId: no migration "${migrationId}"`);
    return { migrationId, status: job.status, ...(job.error === undefined ? {} : { error: job.error }) };
  }

  /** Known to the directory, or holding any data (documents opened only through the sync endpoint have no entry). */
  private exists(key: DocumentKey): boolean {
    if (this.deps.directory.knows(key.apiKey, key.organizationId, key.documentId)) return true;
    const prefix = [key.apiKey, key.organizationId, key.documentId];
    return this.deps.databases.some((name) => this.database(name).getKeysCount({ start: prefix, end: [...prefix, KEY_END], limit: 1 }) > 0);
  }

  /**
   * Idempotent: both documents are unloaded and held (their sockets closed with 4410), then one transaction copies
   * every range to the new id, re-keys the directory entry and removes the old ranges. Run again after a crash, it
   * finds the work done (old gone, new there) and succeeds.
   */
  private async run(job: JobRecord<MigrationParams, { moved: number }>): Promise<{ moved: number }> {
    const { organizationId, documentId, newDocumentId } = job.params;
    const from = { apiKey: job.apiKey, organizationId, documentId };
    const to = { ...from, documentId: newDocumentId };
    return this.deps.documents.exclusively([from, to], CLOSE.DOCUMENT_MOVED, `moved to ${newDocumentId}`, async () => {
      // Comment and presence writes of the closed connections may still be in the group commit.
      await this.deps.store.group.barrier();
      return this.deps.store.transaction(() => {
        const fromExists = this.exists(from);
        if (!fromExists && this.exists(to)) return { moved: 0 };
        if (this.exists(to)) throw alreadyExists(`document "${newDocumentId}" was created while the migration waited`);
        let moved = 0;
        for (const name of this.deps.databases) moved += this.moveRange(name, from, newDocumentId);
        this.deps.directory.rekeyInWrite(job.apiKey, organizationId, documentId, newDocumentId);
        return { moved };
      });
    });
  }

  /** Only inside a transaction. Copies a document's entries of one database to the new id and removes the old ones. */
  private moveRange(name: DbName, from: DocumentKey, newDocumentId: string): number {
    const db = this.database(name);
    const prefix = [from.apiKey, from.organizationId, from.documentId];
    const entries = Array.from(db.getRange({ start: prefix, end: [...prefix, KEY_END] }));
    for (const { key, value } of entries) {
      const rest = (key as unknown[]).slice(3) as Array<string | number>;
      db.putSync([from.apiKey, from.organizationId, newDocumentId, ...rest], this.retarget(name, value, newDocumentId));
      db.removeSync(key);
      // A thread's index rows name its document (they are keyed by time and by id, outside the document's range).
      if (name === DB.annotations) moveThreadTime(this.deps.store, [from.apiKey, from.organizationId, from.documentId], newDocumentId, value as TimedThread);
    }
    return entries.length;
  }

  /** Records that name their document carry the new id. */
  private retarget(name: DbName, value: unknown, newDocumentId: string): unknown {
    if (name === DB.recordings && typeof value === 'object' && value !== null) return { ...value, documentId: newDocumentId };
    return value;
  }

  private database(name: DbName) {
    return BINARY.has(name) ? this.deps.store.binary(name) : this.deps.store.records<unknown>(name);
  }
}
