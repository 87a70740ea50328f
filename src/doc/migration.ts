// Owns document migration (upstream 2.14 documents/migrate): re-keying a document's data and directory entry as a durable job.
import { alreadyExists, CLOSE, invalidArgument, notFound } from '../errors.js';
import type { Store } from '../store/env.js';
import { WRITE_BATCH } from '../store/chunked-scan.js';
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

/** What migration needs of the directory: its document entries and the grants on them, re-keyed after the data. */
export interface MigrationDirectory {
  knows(apiKey: string, organizationId: string, documentId: string): boolean;
  /** Moves the grants on the document in bounded writes, then its entry; idempotent (a re-run moves what is left). */
  rekey(apiKey: string, organizationId: string, documentId: string, newDocumentId: string): Promise<boolean>;
}

export interface MigrationDeps {
  readonly store: Store;
  readonly documents: { exclusively<T>(keys: readonly DocumentKey[], code: number, reason: string, work: () => Promise<T>): Promise<T> };
  readonly directory: MigrationDirectory;
  readonly jobs: Jobs;
  /** Every database keyed [apiKey, organizationId, documentId, ...] (src/tenant/directory/data-owners.ts). */
  readonly databases: readonly DbName[];
  /**
   * Hold the documents of migrations a crash stopped part-way from construction (before the server listens) until
   * their jobs run again. One process only: in a cluster the hold would claim leases at start (docs/cluster.md).
   */
  readonly holdPartMovedAtStart?: boolean;
}

const BINARY: ReadonlySet<DbName> = new Set([DB.docUpdates, DB.docSnapshots]);

/**
 * Rows one write of a migration moves: a moved row is written under the new id and removed under the old, and a thread
 * counts 3 (its two index rows move with it), so about WRITE_BATCH changes. One transaction for a document of 10,000
 * updates, 5,000 threads and 1,000 grants held every workspace's writes and the event loop for 139–194 ms
 * (bench/README.md, "Twenty-fifth session: document migration in bounded writes").
 */
export const ROWS_PER_MOVE = WRITE_BATCH / 2;
const THREAD_ROWS = 3;

/**
 * The job's progress (`Jobs.recordProgressInWrite`) once its first write has checked the new id and begun: from then
 * on, rows under the new id are the ones it moved, and a re-run moves the rest instead of refusing the taken id.
 */
const MOVING = 'moving';

export class DocumentMigrations {
  /** Releases of the holds taken at start on part-moved documents, by job id: each goes once its job holds them itself. */
  private readonly startHolds = new Map<string, () => void>();

  constructor(private readonly deps: MigrationDeps) {
    deps.jobs.register<MigrationParams, { moved: number }>(MIGRATION_JOB, (job) => this.run(job));
    if (deps.holdPartMovedAtStart === true) this.holdPartMoved();
  }

  /**
   * A migration a crash stopped between two writes left its document part-moved, and its job runs again only after
   * the server listens (the worker's first scan, maybe a wait for a slot): both ids are held from now until then, so
   * no connection or REST call that comes first loads either half. `exclusively` holds them before its first await.
   */
  private holdPartMoved(): void {
    for (const job of this.deps.jobs.unfinished(MIGRATION_JOB)) {
      if (job.progress !== MOVING) continue;
      const { organizationId, documentId, newDocumentId } = job.params as MigrationParams;
      const from = { apiKey: job.apiKey, organizationId, documentId };
      const released = new Promise<void>((resolve) => this.startHolds.set(job.jobId, resolve));
      this.deps.documents
        .exclusively([from, { ...from, documentId: newDocumentId }], CLOSE.DOCUMENT_MOVED, `moved to ${newDocumentId}`, () => released)
        .catch((error: unknown) => process.emitWarning(`holding a part-moved document until its migration resumes failed: ${String(error)}`));
    }
  }

  /** Lets the hold taken at start on the job's documents go (the job holds them itself by now, or has failed). */
  private releaseStartHold(jobId: string): void {
    this.startHolds.get(jobId)?.();
    this.startHolds.delete(jobId);
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
   * Both documents are unloaded and held (their sockets closed with 4410) for the whole job. The first write checks
   * the new id is free and records on the job that the move has begun; then writes of ROWS_PER_MOVE rows each move
   * every range to the new id (each row written there and removed here in one write), the grants follow in bounded
   * writes, and the directory entry is re-keyed last. A crash between two writes leaves each row on one side; the
   * re-run at the next start finds the job begun and moves what is left under the old id (until then both ids are
   * held from start: `holdPartMoved`). A job from before the
   * progress was recorded: the old id gone and the new one there means the move committed.
   */
  private async run(job: JobRecord<MigrationParams, { moved: number }>): Promise<{ moved: number }> {
    const { organizationId, documentId, newDocumentId } = job.params;
    const from = { apiKey: job.apiKey, organizationId, documentId };
    const to = { ...from, documentId: newDocumentId };
    try {
      return await this.deps.documents.exclusively([from, to], CLOSE.DOCUMENT_MOVED, `moved to ${newDocumentId}`, () => this.move(job, from, to));
    } finally {
      this.releaseStartHold(job.jobId);
    }
  }

  /** The job's work, with both documents held. */
  private async move(job: JobRecord<MigrationParams, { moved: number }>, from: DocumentKey, to: DocumentKey): Promise<{ moved: number }> {
    const { organizationId, documentId, newDocumentId } = job.params;
    // Held here now: a hold taken at start for this job can go.
    this.releaseStartHold(job.jobId);
    // Comment and presence writes of the closed connections may still be in the group commit.
    await this.deps.store.group.barrier();
    const begun = await this.deps.store.transaction(() => {
      if (this.deps.jobs.get(job.apiKey, job.jobId).progress === MOVING) return true;
      const fromExists = this.exists(from);
      if (!fromExists && this.exists(to)) return false;
      if (this.exists(to)) throw alreadyExists(`document "${newDocumentId}" was created while the migration waited`);
      this.deps.jobs.recordProgressInWrite(job, MOVING);
      return true;
    });
    if (!begun) return { moved: 0 };
    let moved = 0;
    for (;;) {
      const rows = await this.deps.store.transaction(() => this.moveSome(from, newDocumentId));
      moved += rows.moved;
      if (!rows.full) break;
    }
    await this.deps.directory.rekey(job.apiKey, organizationId, documentId, newDocumentId);
    return { moved };
  }

  /**
   * Only inside a transaction. Moves up to ROWS_PER_MOVE rows of the document, the databases in turn; `full` when it
   * filled the write (more may be left), otherwise every range was read to its end.
   */
  private moveSome(from: DocumentKey, newDocumentId: string): { moved: number; full: boolean } {
    let room = ROWS_PER_MOVE;
    let moved = 0;
    for (const name of this.deps.databases) {
      const cost = name === DB.annotations ? THREAD_ROWS : 1;
      const limit = Math.floor(room / cost);
      if (limit === 0) return { moved, full: true };
      const taken = this.moveRange(name, from, newDocumentId, limit);
      moved += taken;
      room -= taken * cost;
      if (taken === limit) return { moved, full: true };
    }
    return { moved, full: false };
  }

  /** Only inside a transaction. Moves at most `limit` of a document's entries of one database to the new id; answers how many. */
  private moveRange(name: DbName, from: DocumentKey, newDocumentId: string, limit: number): number {
    const db = this.database(name);
    const prefix = [from.apiKey, from.organizationId, from.documentId];
    // Collected first: removing while a cursor walks the same range would skip entries.
    const entries = Array.from(db.getRange({ start: prefix, end: [...prefix, KEY_END], limit }));
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
