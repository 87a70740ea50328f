// Owns Get Comment Annotations and the counts across documents: which documents to read, filters, nulls, paging, grouping.
import { dict } from '../../dict.js';
import type { Store } from '../../store/env.js';
import type { CollabDocuments } from '../collab-state.js';
import { annotationView, type AnnotationView } from './model.js';
import type { DocumentKey } from '../../document-key.js';
import { countFor, matches, PageCollector, type AnnotationFilter, type Order, type Page, type Row } from './query.js';
import { AnnotationState } from './state.js';
import { indexedPage, threadsById } from './time-index.js';

export interface ListInput extends AnnotationFilter {
  readonly organizationId: string;
  /** Only documents filed directly in this folder (the directory answers which). */
  readonly folderId?: string;
  readonly documentId?: string;
  readonly documentIds?: readonly string[];
  readonly annotationIds?: readonly string[];
  readonly groupByDocumentId?: boolean;
  readonly order?: Order;
  readonly pageSize?: number;
  readonly pageToken?: string;
}

export interface Listing {
  readonly data: Array<AnnotationView | null> | Record<string, AnnotationView[]>;
  readonly nextPageToken?: string;
}

export const DEFAULT_PAGE_SIZE = 1000;

/** Where a listing finds its documents: stored thread keys, and the directory for folders. */
export interface DocumentSource {
  readonly store: Store;
  /** Ids of the documents filed directly in the folder; throws NOT_FOUND for an unknown folder. */
  readonly folderDocuments: (apiKey: string, organizationId: string, folderId: string) => readonly string[];
  /**
   * One process: a listing that names no document reads the organization's committed threads straight from LMDB (a
   * page from the time index, `indexedPage`; requested ids through the index by id, `threadsById`) instead of loading
   * every document that has threads. Absent on a cluster node,
   * whose store is a cache that may lag the documents' owners: each document is read through its owner there.
   */
  readonly scanCommitted?: boolean;
}

/** The directory's document listing, as far as folders need it (structurally tenant Documents.get). */
export interface DocumentPages {
  get(
    apiKey: string,
    organizationId: string,
    query: { folderId: string; pageSize: number; pageToken?: string },
  ): { readonly rows: ReadonlyArray<{ readonly id: string }>; readonly nextPageToken?: string };
}

/** folderDocuments over the directory's paged listing. */
export function folderDocumentsFrom(documents: DocumentPages): DocumentSource['folderDocuments'] {
  return (apiKey, organizationId, folderId) => {
    const ids: string[] = [];
    let pageToken: string | undefined;
    do {
      const page = documents.get(apiKey, organizationId, { folderId, pageSize: 1000, ...(pageToken === undefined ? {} : { pageToken }) });
      ids.push(...page.rows.map((row) => row.id));
      pageToken = page.nextPageToken;
    } while (pageToken !== undefined);
    return ids;
  };
}

/** The documents a query names (`documentId`, `documentIds`), each once; none: every document of the organization. */
function namedDocuments(input: ListInput): string[] {
  return [...new Set([...(input.documentId === undefined ? [] : [input.documentId]), ...(input.documentIds ?? [])])];
}

/** The documents a query covers: the ones named, else every document of the organization that has threads; within the folder when one is given. */
function documentsOf(source: DocumentSource, apiKey: string, input: ListInput, named: readonly string[]): readonly string[] {
  const candidates = named.length > 0 ? named : AnnotationState.documentIds(source.store, apiKey, input.organizationId);
  if (input.folderId === undefined) return candidates;
  const inFolder = new Set(source.folderDocuments(apiKey, input.organizationId, input.folderId));
  return candidates.filter((id) => inFolder.has(id));
}

export async function listAnnotations(docs: CollabDocuments, source: DocumentSource, apiKey: string, input: ListInput): Promise<Listing> {
  const refOf = (documentId: string): DocumentKey => ({ apiKey, organizationId: input.organizationId, documentId });
  const named = namedDocuments(input);
  // Only what the answer can hold is kept as rows come: the requested ids, or the page (PageCollector), never every
  // thread the listing reads (an organization may hold 100,000, each decoded).
  const wanted = input.annotationIds === undefined ? undefined : new Set(input.annotationIds);
  const byId = new Map<string, Row>();
  const collector = wanted === undefined ? new PageCollector(input.order ?? 'desc', input.pageSize ?? DEFAULT_PAGE_SIZE, input.pageToken) : undefined;
  const take = (row: Row): void => {
    if (wanted === undefined) collector?.add(row);
    else if (wanted.has(row.record.annotationId)) byId.set(row.record.annotationId, row);
  };
  const view = (row: Row): AnnotationView => annotationView(refOf(row.documentId), row.record);
  if (source.scanCommitted === true && named.length === 0) {
    // Every thread of the organization, from the committed rows, no document loaded. Every change a client was
    // answered for has committed, so it is there.
    const inFolder = input.folderId === undefined ? undefined : new Set(source.folderDocuments(apiKey, input.organizationId, input.folderId));
    if (wanted === undefined) {
      // A page: walked in the time index from its token, reading about a page of rows (src/doc/annotations/time-index.ts).
      const query = { ...input, order: input.order ?? 'desc', pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE };
      return answer(await indexedPage(source.store, apiKey, query, inFolder), input, view);
    }
    // Requested ids: read through the index by id, a row and a thread per id and document that has it.
    threadsById(source.store, apiKey, input.organizationId, input.annotationIds ?? [], (documentId, record) => {
      if ((inFolder === undefined || inFolder.has(documentId)) && matches(record, input)) take({ documentId, record });
    });
  } else {
    for (const documentId of documentsOf(source, apiKey, input, named)) {
      const records = await docs.read(refOf(documentId), (doc) => [...doc.annotations.all()].filter((record) => matches(record, input)));
      for (const record of records) take({ documentId, record });
    }
  }
  if (collector === undefined) {
    // One entry per requested id, in request order; null when it does not exist (or other filters exclude it).
    const found = (input.annotationIds ?? []).map((id) => byId.get(id));
    if (input.groupByDocumentId === true) return { data: group(found.filter((row): row is Row => row !== undefined), view) };
    return { data: found.map((row) => (row === undefined ? null : view(row))) };
  }
  return answer(collector.page(), input, view);
}

function answer(result: Page, input: ListInput, view: (row: Row) => AnnotationView): Listing {
  const data = input.groupByDocumentId === true ? group(result.rows, view) : result.rows.map(view);
  return result.nextPageToken === undefined ? { data } : { data, nextPageToken: result.nextPageToken };
}

function group(rows: readonly Row[], view: (row: Row) => AnnotationView): Record<string, AnnotationView[]> {
  const grouped: Record<string, AnnotationView[]> = dict();
  for (const row of rows) (grouped[row.documentId] ??= []).push(view(row));
  return grouped;
}

export interface CountInput {
  readonly organizationId: string;
  readonly documentIds: readonly string[];
  readonly userId: string;
  readonly statusIds?: readonly string[];
}

/** Count: `{[documentId]: {total, unread}}` for one user (unread: see query.ts isUnread). */
export async function countAnnotations(docs: CollabDocuments, apiKey: string, input: CountInput): Promise<Record<string, { total: number; unread: number }>> {
  const counts: Record<string, { total: number; unread: number }> = dict();
  for (const documentId of new Set(input.documentIds)) {
    counts[documentId] = await docs.read({ apiKey, organizationId: input.organizationId, documentId }, (doc) =>
      countFor(doc.annotations.all(), input.userId, input.statusIds),
    );
  }
  return counts;
}
