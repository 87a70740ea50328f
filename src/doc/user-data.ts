// Owns the GDPR view of one user (upstream 1.3 users/data): what each feature holds about them, and erasing it as a job.
import type { Database, Key } from 'lmdb';
import { invalidArgument } from '../errors.js';
import { pageMatches, type MatchPage } from '../store/chunked-scan.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
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

/**
 * Where a feature's export resumes: the stored key of the last item handed out. Every source keys its rows by API key
 * first, so a cursor always starts with the caller's API key (checked: a token never reads another tenant's range).
 */
export type ExportCursor = Array<string | number>;

/** One feature's part of a user's data: listed in a stable order, a page at a time, and erased (removed or anonymised). */
export interface UserDataSource {
  readonly feature: string;
  /**
   * The first `limit` items after `after` (from the start when undefined), with the cursor of the last one when more
   * follow. Reads in chunks with a turn of the event loop between them (src/store/chunked-scan.ts): finding one user's
   * items means reading every row of the API key, which must not hold other tenants' requests.
   */
  collect(apiKey: string, userId: string, after: ExportCursor | undefined, limit: number): Promise<MatchPage<unknown>>;
  /** Answers how many items it removed or anonymised; running it again finds nothing left. */
  erase(apiKey: string, userId: string): Promise<number>;
}

export interface UserDataExport {
  readonly userId: string;
  /** feature -> this page's items (at most EXPORT_PAGE_ITEMS each). */
  readonly features: Record<string, unknown[]>;
  readonly nextPageToken?: string;
}

/** Where a page starts: the first page, each unfinished feature's cursor, or a page number (tokens made before cursors). */
type Position = { readonly kind: 'first' } | { readonly kind: 'after'; readonly cursors: ReadonlyMap<string, ExportCursor> } | { readonly kind: 'page'; readonly page: number };

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

  /**
   * One page: up to 100 items of every feature, each feature resuming after the last item the previous page gave, so
   * paging through an export reads each stored row once. A token while any feature has more; a feature missing from
   * the token's cursors is finished and answers no items.
   */
  async export(apiKey: string, userId: string, pageToken?: string): Promise<UserDataExport> {
    const position = readToken(pageToken, apiKey, userId);
    const features: Record<string, unknown[]> = {};
    // A Map, and an object only for the token: a feature name never reaches an object's prototype.
    const cursors = new Map<string, ExportCursor>();
    for (const { feature, collect } of this.sources) {
      let found: MatchPage<unknown>;
      if (position.kind === 'page') {
        // A page-numbered token: that page is the last 100 of the first (page + 1) × 100 items.
        const upTo = await collect(apiKey, userId, undefined, (position.page + 1) * EXPORT_PAGE_ITEMS);
        found = { ...upTo, items: upTo.items.slice(position.page * EXPORT_PAGE_ITEMS) };
      } else if (position.kind === 'after') {
        const after = position.cursors.get(feature);
        found = after === undefined ? { items: [] } : await collect(apiKey, userId, after, EXPORT_PAGE_ITEMS);
      } else {
        found = await collect(apiKey, userId, undefined, EXPORT_PAGE_ITEMS);
      }
      features[feature] = found.items;
      if (found.next !== undefined) cursors.set(feature, toCursor(found.next));
    }
    if (cursors.size === 0) return { userId, features };
    return { userId, features, nextPageToken: Buffer.from(JSON.stringify({ userId, after: Object.fromEntries(cursors) })).toString('base64url') };
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

const isCursor = (value: unknown, apiKey: string): value is ExportCursor =>
  Array.isArray(value) && value[0] === apiKey && value.every((part) => typeof part === 'string' || (typeof part === 'number' && Number.isFinite(part)));

/** A stored key as a cursor; every source keys by API key, then strings and numbers. */
function toCursor(key: Key): ExportCursor {
  if (!Array.isArray(key) || !key.every((part) => typeof part === 'string' || typeof part === 'number')) throw new Error(`an export source answered a key that is not a cursor: ${String(key)}`);
  return key as Array<string | number>;
}

/** The position a token names; INVALID_ARGUMENT when it is not a token of this user's export (or of this API key's). */
function readToken(token: string | undefined, apiKey: string, userId: string): Position {
  if (token === undefined) return { kind: 'first' };
  const refused = 'data.pageToken is not a page token of this export';
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalidArgument(refused, { cause: error });
  }
  const { userId: owner, page, after } = (typeof body === 'object' && body !== null ? body : {}) as { userId?: unknown; page?: unknown; after?: unknown };
  if (owner !== userId) throw invalidArgument(refused);
  if (typeof page === 'number' && Number.isInteger(page) && page >= 1) return { kind: 'page', page };
  if (typeof after !== 'object' || after === null || Array.isArray(after)) throw invalidArgument(refused);
  const cursors = new Map<string, ExportCursor>();
  for (const [feature, cursor] of Object.entries(after)) {
    if (!isCursor(cursor, apiKey)) throw invalidArgument(refused);
    cursors.set(feature, cursor);
  }
  return { kind: 'after', cursors };
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

type Involved = { organizationId: string; documentId: string; record: AnnotationRecord; roles: string[] };

/** Comment threads the user wrote, was assigned, commented on, was tagged in, resolved or moved. */
export function commentSource(store: Store, collab: CollabWriter): UserDataSource {
  const db: Database<AnnotationRecord, Key> = store.records<AnnotationRecord>(DB.annotations);
  const involved = (userId: string) => (key: Key, record: AnnotationRecord): Involved | undefined => {
    const roles = involvement(record, userId);
    const [, organizationId, documentId] = key as [string, string, string];
    return roles.length === 0 ? undefined : { organizationId, documentId, record, roles };
  };
  return {
    feature: 'comments',
    collect: async (apiKey, userId, after, limit) => {
      const found = await pageMatches(db, [apiKey], after, limit, involved(userId));
      return {
        ...found,
        items: found.items.map(({ organizationId, documentId, record, roles }) => ({
          organizationId,
          documentId,
          annotationId: record.annotationId,
          involvement: roles,
          comments: record.comments.filter((c) => c.from.userId === userId).map((c) => ({ commentId: c.commentId, commentText: c.commentText, commentHtml: c.commentHtml, createdAt: c.createdAt })),
        })),
      };
    },
    erase: async (apiKey, userId) => {
      const byDocument = new Map<string, { ref: DocumentKey; ids: string[]; resolved: string[]; statused: string[] }>();
      for (const { organizationId, documentId, record } of (await pageMatches(db, [apiKey], undefined, Infinity, involved(userId))).items) {
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
  const theirs = (userId: string) => (key: Key, value: Record<string, unknown>) => {
    const [, organizationId, documentId, owner] = key as [string, string, string, string];
    return owner === userId ? { organizationId, documentId, value } : undefined;
  };
  return {
    feature: 'presence',
    collect: async (apiKey, userId, after, limit) => {
      const found = await pageMatches(db, [apiKey], after, limit, theirs(userId));
      return { ...found, items: found.items.map(({ organizationId, documentId, value }) => ({ organizationId, documentId, ...value })) };
    },
    erase: async (apiKey, userId) => {
      const { items } = await pageMatches(db, [apiKey], undefined, Infinity, theirs(userId));
      for (const { organizationId, documentId } of items) await collab.presence({ apiKey, organizationId, documentId }, (state) => state.remove([userId]));
      return items.length;
    },
  };
}
