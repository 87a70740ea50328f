// Owns recorder annotations (upstream 2.21 recordings/get, plus Plait's recordings/add and delete): records and their paging.
import type { Database, Key } from 'lmdb';
import { randomId } from '../auth/secrets.js';
import { inWriteBatches, pageMatches, type MatchPage } from '../store/chunked-scan.js';
import { invalidArgument } from '../errors.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { DocumentKey } from '../document-key.js';
import type { Outbox } from '../events/outbox.js';
import { eventMetadata, type EventPayload } from '../events/types.js';

/** Rows one page of recordings/get examines at most, CHUNK_ROWS between turns of the event loop (`Recordings.get`). */
export const PAGE_EXAMINE_RECORDINGS = 5000;

/** One attachment: Plait stores where the customer keeps the bytes, never the bytes. */
export interface RecordingAttachment {
  attachmentId: string;
  url: string;
  mimeType: string;
  name: string;
  type: string;
  size: number;
}

export interface RecordingInput {
  annotationId?: string;
  recordingType: string;
  mode?: string;
  metadata?: Record<string, unknown>;
  recordedTime: { duration: number; display?: string };
  displayName?: string;
  from?: { userId: string; name?: string; email?: string };
  attachments: Array<Omit<RecordingAttachment, 'attachmentId' | 'type'> & { attachmentId?: string; type?: string }>;
}

/** A recording as stored and as returned (upstream 2.21's shape plus its place and times). */
export interface Recording {
  annotationId: string;
  type: 'recorder';
  organizationId: string;
  documentId: string;
  recordingType: string;
  mode: string;
  metadata: Record<string, unknown>;
  recordedTime: { duration: number; display: string };
  displayName: string;
  from?: { userId: string; name?: string; email?: string };
  attachments: RecordingAttachment[];
  /** Bumped by each add that replaces the recording (same annotationId). */
  latestVersion: number;
  createdAt: number;
  lastUpdated: number;
}

/** `data` of a `recorder.done` event: upstream's RecorderPayload, from what Plait stores (no transcription). */
export interface RecorderPayload extends EventPayload {
  readonly recorderId: string;
  readonly actionUser?: { userId: string; name?: string; email?: string };
  readonly from?: { userId: string; name?: string; email?: string };
  readonly assets: ReadonlyArray<{ version: number; url: string; mimeType: string; fileName: string; fileSizeInBytes: number; fileFormat?: string }>;
}

/** Upstream's `fileFormat` values (`mp3`, `mp4`, `webm`) by MIME type; another type's is left out. */
const FILE_FORMATS: ReadonlyMap<string, string> = new Map([
  ['audio/mpeg', 'mp3'],
  ['audio/mp3', 'mp3'],
  ['audio/mp4', 'mp4'],
  ['video/mp4', 'mp4'],
  ['audio/webm', 'webm'],
  ['video/webm', 'webm'],
]);

function recorderPayload(key: DocumentKey, recording: Recording): RecorderPayload {
  const from = recording.from;
  return {
    recorderId: recording.annotationId,
    ...(from === undefined ? {} : { actionUser: from, from }),
    assets: recording.attachments.map((a) => {
      const format = FILE_FORMATS.get(a.mimeType.split(';')[0]?.trim().toLowerCase() ?? '');
      return { version: recording.latestVersion, url: a.url, mimeType: a.mimeType, fileName: a.name, fileSizeInBytes: a.size, ...(format === undefined ? {} : { fileFormat: format }) };
    }),
    metadata: eventMetadata(key),
  };
}

export interface RecordingQuery {
  organizationId: string;
  documentId?: string;
  recordingIds?: readonly string[];
  pageSize: number;
  pageToken?: string;
}

/** `m:ss` (or `h:mm:ss`) of a duration in ms, as the recorder shows it. */
export function displayDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const [h, m, s] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  const pad = (n: number): string => String(n).padStart(2, '0');
  return h > 0 ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}

export class Recordings {
  private readonly db: Database<Recording, Key>;

  /** `outbox`: where `recorder.done` is raised, with the recording, when a channel wants it; absent: never. */
  constructor(private readonly store: Store, private readonly now: () => number = Date.now, private readonly outbox?: Outbox) {
    this.db = store.records<Recording>(DB.recordings);
  }

  /**
   * Adds (or replaces, by annotationId) recordings on one document in one transaction; answers each one's id. Each
   * raises `recorder.done` in the same transaction (a recording is added when the customer's recorder finished it).
   */
  async add(key: DocumentKey, inputs: readonly RecordingInput[]): Promise<Record<string, { success: true; id: string; message: string }>> {
    const now = this.now();
    const results = new Map<string, { success: true; id: string; message: string }>();
    let raised = false;
    await this.store.transaction((tx) => {
      for (const input of inputs) {
        const annotationId = input.annotationId ?? randomId(20);
        const storeKey = [key.apiKey, key.organizationId, key.documentId, annotationId];
        const existing = this.db.get(storeKey);
        const recording: Recording = {
          annotationId,
          type: 'recorder',
          organizationId: key.organizationId,
          documentId: key.documentId,
          recordingType: input.recordingType,
          mode: input.mode ?? 'default',
          metadata: input.metadata ?? {},
          recordedTime: { duration: input.recordedTime.duration, display: input.recordedTime.display ?? displayDuration(input.recordedTime.duration) },
          displayName: input.displayName ?? '',
          ...(input.from === undefined ? {} : { from: input.from }),
          attachments: input.attachments.map((a) => ({
            attachmentId: a.attachmentId ?? randomId(20),
            url: a.url,
            mimeType: a.mimeType,
            name: a.name,
            type: a.type ?? a.mimeType.split('/', 1)[0] ?? 'file',
            size: a.size,
          })),
          latestVersion: (existing?.latestVersion ?? 0) + 1,
          createdAt: existing?.createdAt ?? now,
          lastUpdated: now,
        };
        this.db.putSync(storeKey, recording);
        if (this.outbox?.wants(key.apiKey, 'recorder.done') === true) {
          this.outbox.raise(tx, { type: 'recorder.done', ...key, data: recorderPayload(key, recording) }, now);
          raised = true;
        }
        results.set(annotationId, { success: true, id: annotationId, message: existing === undefined ? 'Recording added.' : 'Recording replaced.' });
      }
    });
    if (raised) this.outbox?.committed();
    return Object.fromEntries(results);
  }

  /** Removes recordings of one document; answers per id whether it existed. */
  async delete(key: DocumentKey, annotationIds: readonly string[]): Promise<Record<string, { success: boolean; message: string }>> {
    const results = new Map<string, { success: boolean; message: string }>();
    await this.store.transaction(() => {
      for (const id of annotationIds) {
        const removed = this.db.removeSync([key.apiKey, key.organizationId, key.documentId, id]);
        results.set(id, removed ? { success: true, message: 'Recording deleted.' } : { success: false, message: 'Recording does not exist.' });
      }
    });
    return Object.fromEntries(results);
  }

  /**
   * A page of recordings of one document or a whole organization, in (document id, annotation id) order. `recordingIds`
   * of one document are read by key. Otherwise the range is walked by `pageMatches` (turns of the event loop between chunks),
   * and at most PAGE_EXAMINE_RECORDINGS rows a page: past them the page ends, maybe short or empty, with a token after
   * the last row examined (ids looked for across a whole organization cost the caller pages, not the event loop a walk
   * of every recording: bench/README.md, "Twentieth session: noisy neighbours, second pass").
   */
  async get(apiKey: string, query: RecordingQuery): Promise<{ rows: Recording[]; pageToken?: string }> {
    const prefix = query.documentId === undefined ? [apiKey, query.organizationId] : [apiKey, query.organizationId, query.documentId];
    const wanted = query.recordingIds === undefined ? undefined : new Set(query.recordingIds);
    const after = query.pageToken === undefined ? undefined : this.position(query.pageToken, apiKey, query.organizationId, prefix);
    if (wanted !== undefined && query.documentId !== undefined) return this.byIds(prefix, [...wanted].sort(), after, query.pageSize);
    const page = await pageMatches(this.db, prefix, after, query.pageSize, (_key, value) => (wanted === undefined || wanted.has(value.annotationId) ? value : undefined), PAGE_EXAMINE_RECORDINGS);
    return page.next === undefined ? { rows: page.items } : { rows: page.items, pageToken: this.token(page.next) };
  }

  /** The recordings of one document named by id, read by key in id order after `after`. */
  private byIds(prefix: readonly string[], ids: readonly string[], after: Key | undefined, pageSize: number): { rows: Recording[]; pageToken?: string } {
    const from = after === undefined ? undefined : String((after as unknown[])[3]);
    const rows: Recording[] = [];
    let lastKey: Key | undefined;
    for (const id of ids) {
      if (from !== undefined && id <= from) continue;
      const key = [...prefix, id];
      const value = this.db.get(key);
      if (value === undefined) continue;
      if (rows.length === pageSize) return { rows, pageToken: this.token(lastKey) };
      rows.push(value);
      lastKey = key;
    }
    return { rows };
  }

  private token(key: Key | undefined): string {
    const parts = key as unknown[];
    return Buffer.from(JSON.stringify([parts[2], parts[3]])).toString('base64url');
  }

  private position(token: string, apiKey: string, organizationId: string, prefix: readonly unknown[]): Key {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    } catch (error) {
      throw invalidArgument('data.pageToken is not a page token of this listing', { cause: error });
    }
    if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') {
      throw invalidArgument('data.pageToken is not a page token of this listing');
    }
    if (prefix.length === 3 && parsed[0] !== prefix[2]) throw invalidArgument('data.pageToken belongs to another document');
    return [apiKey, organizationId, parsed[0], parsed[1]];
  }

  /** Recordings made by the user, in every organization of the API key (GDPR export), a page at a time (src/store/chunked-scan.ts). */
  byUser(apiKey: string, userId: string, after: Key | undefined, limit: number): Promise<MatchPage<Recording>> {
    return pageMatches(this.db, [apiKey], after, limit, (_key, value) => (value.from?.userId === userId ? value : undefined));
  }

  /**
   * Drops the user as the author of their recordings (GDPR erase); the clips stay with the document. Answers how many
   * changed. Found by a chunked scan, changed WRITE_BATCH at a time, each re-read inside its transaction.
   */
  async anonymize(apiKey: string, userId: string): Promise<number> {
    const { items } = await pageMatches(this.db, [apiKey], undefined, Infinity, (key, value) => (value.from?.userId === userId ? key : undefined));
    return inWriteBatches(this.store, items, (_tx, key) => {
      const value = this.db.get(key);
      if (value === undefined || value.from?.userId !== userId) return false;
      const { from: _from, ...rest } = value;
      this.db.putSync(key, rest);
      return true;
    });
  }
}
