// Owns the GDPR view of one user (upstream 1.3 users/data): what each feature holds about them, and erasing it as a job.
import type { Database, Key } from 'lmdb';
import type { Store } from '../store/env.js';
import { DB, KEY_END } from '../store/keys.js';
import type { JobRecord, Jobs } from '../tenant/jobs.js';
import type { AnnotationRecord, UserRef } from './annotations/model.js';
import type { AnnotationState } from './annotations/state.js';
import type { DocumentKey } from '../document-key.js';
import type { PresenceState } from './presence.js';

export const ERASE_JOB = 'user-data-erase';
/** Items of each feature in one export page (upstream 5). */
export const EXPORT_PAGE_ITEMS = 100;
/** Who an erased user becomes where a thread must keep an author. */
export const ERASED_USER: UserRef = Object.freeze({ userId: 'erased-user', name: 'Deleted user' });

/** One feature's part of a user's data: listed in a stable order, and erased (removed or anonymised). */
export interface UserDataSource {
  readonly feature: string;
  collect(apiKey: string, userId: string): unknown[];
  /** Answers how many items it removed or anonymised; running it again finds nothing left. */
  erase(apiKey: string, userId: string): Promise<number>;
}

export interface UserDataExport {
  readonly userId: string;
  /** feature -> this page's items (at most EXPORT_PAGE_ITEMS each). */
  readonly features: Record<string, unknown[]>;
  readonly nextPageToken?: string;
}

export class UserData {
  private readonly sources: UserDataSource[] = [];

  constructor(private readonly jobs: Jobs) {
    jobs.register<{ userId: string }, Record<string, number>>(ERASE_JOB, (job) => this.eraseNow(job));
  }

  /** Adds a feature (notifications and activities register theirs where they live). */
  addSource(source: UserDataSource): void {
    this.sources.push(source);
  }

  get features(): string[] {
    return this.sources.map((source) => source.feature);
  }

  /** One page: the items [page × 100, page × 100 + 100) of every feature; a token while any feature has more. */
  export(apiKey: string, userId: string, page: number): UserDataExport {
    const features: Record<string, unknown[]> = {};
    let more = false;
    for (const source of this.sources) {
      const items = source.collect(apiKey, userId);
      features[source.feature] = items.slice(page * EXPORT_PAGE_ITEMS, (page + 1) * EXPORT_PAGE_ITEMS);
      if (items.length > (page + 1) * EXPORT_PAGE_ITEMS) more = true;
    }
    return more ? { userId, features, nextPageToken: Buffer.from(JSON.stringify({ userId, page: page + 1 })).toString('base64url') } : { userId, features };
  }

  /** Records the erase job (it survives a crash and resumes) and answers its id and how many features it covers. */
  async erase(apiKey: string, userId: string): Promise<{ jobId: string; tasksCount: number }> {
    const job = await this.jobs.submit(apiKey, ERASE_JOB, { userId });
    return { jobId: job.jobId, tasksCount: this.sources.length };
  }

  private async eraseNow(job: JobRecord<{ userId: string }, Record<string, number>>): Promise<Record<string, number>> {
    const erased: Record<string, number> = {};
    for (const source of this.sources) erased[source.feature] = await source.erase(job.apiKey, job.params.userId);
    return erased;
  }
}

/** What the comment and presence sources need to change a document's state through its actor. */
export interface CollabWriter {
  annotations<T>(ref: DocumentKey, change: (state: AnnotationState) => Promise<{ data: T }>): Promise<T>;
  presence(ref: DocumentKey, change: (state: PresenceState) => Promise<unknown>): Promise<unknown>;
}

/** How a thread involves the user, for the export. */
function involvement(record: AnnotationRecord, userId: string): string[] {
  const roles: string[] = [];
  if (record.from.userId === userId) roles.push('author');
  if (record.assignedTo?.userId === userId) roles.push('assignee');
  if (record.comments.some((c) => c.from.userId === userId)) roles.push('commenter');
  if (record.comments.some((c) => c.taggedUserContacts.some((tag) => tag.userId === userId))) roles.push('tagged');
  if (record.resolvedByUserId === userId) roles.push('resolver');
  if (record.statusUpdatedByUserId === userId) roles.push('status-updater');
  return roles;
}

/** Comment threads the user wrote, was assigned, commented on, was tagged in, resolved or moved. */
export function commentSource(store: Store, collab: CollabWriter): UserDataSource {
  const db: Database<AnnotationRecord, Key> = store.records<AnnotationRecord>(DB.annotations);
  const involved = (apiKey: string, userId: string) =>
    Array.from(db.getRange({ start: [apiKey], end: [apiKey, KEY_END] })).flatMap(({ key, value }) => {
      const roles = involvement(value, userId);
      const [, organizationId, documentId] = key as [string, string, string];
      return roles.length === 0 ? [] : [{ organizationId, documentId, record: value, roles }];
    });
  return {
    feature: 'comments',
    collect: (apiKey, userId) =>
      involved(apiKey, userId).map(({ organizationId, documentId, record, roles }) => ({
        organizationId,
        documentId,
        annotationId: record.annotationId,
        involvement: roles,
        comments: record.comments.filter((c) => c.from.userId === userId).map((c) => ({ commentId: c.commentId, commentText: c.commentText, commentHtml: c.commentHtml, createdAt: c.createdAt })),
      })),
    erase: async (apiKey, userId) => {
      const byDocument = new Map<string, { ref: DocumentKey; ids: string[]; resolved: string[]; statused: string[] }>();
      for (const { organizationId, documentId, record } of involved(apiKey, userId)) {
        const id = JSON.stringify([organizationId, documentId]);
        const entry = byDocument.get(id) ?? { ref: { apiKey, organizationId, documentId }, ids: [], resolved: [], statused: [] };
        entry.ids.push(record.annotationId);
        if (record.resolvedByUserId === userId) entry.resolved.push(record.annotationId);
        if (record.statusUpdatedByUserId === userId) entry.statused.push(record.annotationId);
        byDocument.set(id, entry);
      }
      // Through each document's actor, so memory and live clients see it and nothing writes the old records back.
      for (const { ref, ids, resolved, statused } of byDocument.values()) {
        await collab.annotations(ref, (state) => state.update({ annotationIds: ids }, undefined, [{ oldUser: { userId }, newUser: ERASED_USER }]));
        if (resolved.length > 0) await collab.annotations(ref, (state) => state.update({ annotationIds: resolved }, { resolvedByUserId: null }, undefined));
        if (statused.length > 0) await collab.annotations(ref, (state) => state.update({ annotationIds: statused }, { statusUpdatedByUserId: null }, undefined));
      }
      return [...byDocument.values()].reduce((sum, entry) => sum + entry.ids.length, 0);
    },
  };
}

/** The user's presence records on every document. */
export function presenceSource(store: Store, collab: CollabWriter): UserDataSource {
  const db = store.records<Record<string, unknown>>(DB.presence);
  const records = (apiKey: string, userId: string) =>
    Array.from(db.getRange({ start: [apiKey], end: [apiKey, KEY_END] })).flatMap(({ key, value }) => {
      const [, organizationId, documentId, owner] = key as [string, string, string, string];
      return owner === userId ? [{ organizationId, documentId, value }] : [];
    });
  return {
    feature: 'presence',
    collect: (apiKey, userId) => records(apiKey, userId).map(({ organizationId, documentId, value }) => ({ organizationId, documentId, ...value })),
    erase: async (apiKey, userId) => {
      const found = records(apiKey, userId);
      for (const { organizationId, documentId } of found) await collab.presence({ apiKey, organizationId, documentId }, (state) => state.remove([userId]));
      return found.length;
    },
  };
}
