// Owns removing from the state log's object stores what nothing needs any more: blobs of purged messages, and chunks no object's metadata points at (uploads cut off half-way, deletes cut off before their purge).
import type { JetStreamManager, ObjectStore } from 'nats';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';

/** DB.meta key of the scratch store (src/cluster/compactor.ts): the blob that stream message `seq` referenced. */
export const blobRef = (seq: number): [string, number] => ['blob', seq];

/**
 * Deletes the blobs the scratch store knows of messages up to `seq` (purged: no node applies them again), forgetting them
 * once gone; returns how many were there and their bytes. A blob is deleted only by the sequence of a message that
 * referenced it, never because no message seems to: a message whose blob is uploaded but not yet in the stream (sent,
 * or held by a node cut off from NATS) looks exactly like a leftover.
 */
export async function deleteBlobsUpTo(store: Store, blobs: ObjectStore, seq: number, log: Logger): Promise<{ deleted: number; bytes: number }> {
  const meta = store.records<unknown>(DB.meta);
  const gone: Array<[string, number]> = [];
  let deleted = 0;
  let bytes = 0;
  for (const { key, value } of meta.getRange({ start: blobRef(0), end: blobRef(seq + 1) })) {
    try {
      const info = await blobs.info(value as string);
      if (info !== null && !info.deleted) {
        await blobs.delete(value as string);
        deleted++;
        bytes += info.size;
      }
    } catch (error) {
      // Gone under the delete (another run got there first): nothing left to free.
      log.debug('a purged message\'s blob was not there to delete', { blob: value, error: String(error) });
    }
    gone.push(key as [string, number]);
  }
  if (gone.length > 0) {
    await store.transaction(() => {
      for (const key of gone) void meta.remove(key);
    });
  }
  return { deleted, bytes };
}

/**
 * How old the newest chunk of an upload without metadata must be before it is swept. Checkpoints and blobs are uploaded
 * from memory or the local LMDB, so their chunks follow each other within milliseconds, and nats.js writes the metadata
 * as soon as the last chunk is acknowledged (a chunk not acknowledged fails the upload, and nats.js purges its chunks);
 * ten minutes is a process frozen at that very point for that long.
 */
export const SWEEP_GRACE_MS = 10 * 60_000;

/** What one sweep of one object store removed. */
export interface SweptChunks {
  /** Uploads (object ids, nats.js `nuid`) whose chunks were purged. */
  uploads: number;
  chunks: number;
  /** The purged chunks' bytes: their count times the size of the newest one (exact for a cut-off upload, whose chunks are all full). */
  bytes: number;
  /** Uploads without metadata left alone because their newest chunk is younger than the grace (maybe still in progress). */
  young: number;
}

/** The object store's stream and subjects (nats.js 2.29 layout: `OBJ_<bucket>`, chunks `$O.<bucket>.C.<nuid>`). */
const streamOf = (bucket: string): string => `OBJ_${bucket}`;
const chunkPrefix = (bucket: string): string => `$O.${bucket}.C.`;

/**
 * Purges the chunks of every upload in object store `bucket` that no live object's metadata names and whose newest chunk
 * is older than `graceMs`. The chunk subjects are listed before the metadata, so an upload that completes between the
 * two listings is seen with its metadata; one still in progress has a fresh newest chunk and is left alone.
 */
export async function sweepOrphanChunks(jsm: JetStreamManager, os: ObjectStore, bucket: string, graceMs: number, log: Logger): Promise<SweptChunks> {
  const stream = streamOf(bucket);
  const prefix = chunkPrefix(bucket);
  const swept: SweptChunks = { uploads: 0, chunks: 0, bytes: 0, young: 0 };
  const subjects = (await jsm.streams.info(stream, { subjects_filter: `${prefix}>` })).state.subjects ?? {};
  if (Object.keys(subjects).length === 0) return swept;
  // list() leaves deleted objects out: a delete cut off between its metadata and its purge leaves orphan chunks too.
  const live = new Set((await os.list()).map((info) => info.nuid));
  const now = Date.now();
  for (const subject of Object.keys(subjects)) {
    if (!subject.startsWith(prefix) || live.has(subject.slice(prefix.length))) continue;
    let newest;
    try {
      newest = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    } catch (error) {
      // Purged since the listing (the upload failed and nats.js removed its chunks itself): nothing to sweep.
      log.debug('an orphan upload\'s chunks were gone before the sweep reached them', { bucket, subject, error: String(error) });
      continue;
    }
    if (now - newest.time.getTime() < graceMs) {
      swept.young++;
      continue;
    }
    const purged = await jsm.streams.purge(stream, { filter: subject });
    swept.uploads++;
    swept.chunks += purged.purged;
    swept.bytes += purged.purged * newest.data.length;
  }
  return swept;
}
