// Owns how background jobs are stored: the job record, its row, and the index entries of unfinished jobs beside it.
import type { Database, Key } from 'lmdb';

export type JobStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

export interface JobRecord<P = unknown, R = unknown> {
  readonly jobId: string;
  readonly apiKey: string;
  readonly kind: string;
  readonly params: P;
  status: JobStatus;
  readonly createdAt: number;
  updatedAt: number;
  /** What the job reports when done (counts, for example). */
  result?: R;
  /** Why it failed, for the status answer. */
  error?: string;
  /** How far the job has come, recorded by it (`Jobs.recordProgressInWrite`) and kept across its re-runs. */
  progress?: string;
}

/**
 * [0, jobId] -> apiKey while a job is pending or in progress, written in the transaction that writes its row: the
 * worker's scans read only these, not every job ever kept. A number first (numbers sort before strings in lmdb-js
 * keys), so no [apiKey] range ever meets them.
 */
export const UNFINISHED = 0;
export const unfinishedKey = (jobId: string): Key => [UNFINISHED, jobId];
/**
 * [1, apiKey, jobId] -> true beside it, so a submit counts its key's unfinished jobs (MAX_PENDING_JOBS_PER_KEY) by
 * reading that key's entries only (no scan of the other keys' backlogs). `true`, not a string: a build before them
 * takes a string for a [0] entry; it passes over `true`, and the entries of jobs it finishes are removed by the full
 * pass here (an unfinished row without its entry gets one there too).
 */
export const BY_KEY = 1;
export const byKeyKey = (apiKey: string, jobId: string): Key => [BY_KEY, apiKey, jobId];
export type Row = JobRecord | string | true;
export const isJob = (value: Row | undefined): value is JobRecord => typeof value === 'object' && value !== null;
const unfinished = (status: JobStatus): boolean => status === 'pending' || status === 'in_progress';
export const isUnfinished = (value: Row | undefined): value is JobRecord => isJob(value) && unfinished(value.status);
export const jobIdOf = (key: Key): string => String((key as Key[])[1]);

/** The row and its index entries, in the caller's transaction: unfinished jobs keep them, finished ones lose them. */
export function writeJobRow(db: Database<Row, Key>, job: JobRecord): void {
  db.putSync([job.apiKey, job.jobId], job);
  const key = unfinishedKey(job.jobId);
  const byKey = byKeyKey(job.apiKey, job.jobId);
  if (!unfinished(job.status)) {
    db.removeSync(key);
    db.removeSync(byKey);
    return;
  }
  // Written when missing only: every status change of a running job would otherwise replicate them again (cluster).
  if (db.get(key) !== job.apiKey) db.putSync(key, job.apiKey);
  if (db.get(byKey) === undefined) db.putSync(byKey, true);
}

/** The unfinished jobs of `kind`, read through the [0] index (a few rows: only jobs pending or running). */
export function unfinishedJobs(db: Database<Row, Key>, kind: string): JobRecord[] {
  const found: JobRecord[] = [];
  for (const { key, value } of db.getRange({ start: [UNFINISHED], end: [UNFINISHED + 1] })) {
    const job = typeof value === 'string' ? db.get([value, jobIdOf(key)]) : undefined;
    if (isUnfinished(job) && job.kind === kind) found.push(job);
  }
  return found;
}
