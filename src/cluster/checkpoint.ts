// Owns checkpoints of the replicated rows in the object store: their names, their framed msgpack format, writing, finding, reading and deleting them.
import { pack, unpack } from 'msgpackr';
import type { ObjectStore } from 'nats';
import type { ReplicatedOp } from '../store/replication.js';

export const CHECKPOINT_BUCKET = 'plait_checkpoints';
/**
 * A header `meta` entry that is the compactor's, not the applier's: the blobs of messages up to the checkpoint that were
 * not deleted yet (`[seq, name]` pairs), so the next holder deletes them once their messages are purged. A rebuild skips it.
 */
export const CHECKPOINT_BLOBS_KEY = 'checkpointBlobs';
const PREFIX = 'state-';
/** Rows handed to the reader's callback at once (one LMDB transaction when loading into a cache). */
const ROWS_PER_BATCH = 2_000;
/** A read that gets no chunk for this long is given up (a checkpoint deleted under it never finishes). */
const READ_STALL_MS = 10_000;
/** 2: the header carries the applier's fold state (`meta`); 1 (no `meta`) is still read. */
const VERSION = 2;

/** The first frame: what the checkpoint is an image of. */
interface Header {
  readonly v: number;
  /** The image is the state after stream message `seq` (all of 1..seq applied, nothing after). */
  readonly seq: number;
  /** The stream's creation time: a checkpoint of another stream (NATS store wiped) is never loaded. */
  readonly stream: string;
  /**
   * The applier's own state at `seq`, as DB.meta entries: the newest claim per document (fencing) and the open
   * per-origin gaps. A cache loaded from the rows alone would apply a fenced write that every other node dropped.
   */
  readonly meta?: ReadonlyArray<readonly [string, unknown]>;
}

/** The last frame: how many rows came before it (a checkpoint cut short is refused). */
interface Trailer {
  readonly end: number;
}

export interface CheckpointRef {
  readonly name: string;
  readonly seq: number;
  readonly size: number;
}

export const checkpointName = (seq: number): string => `${PREFIX}${seq.toString().padStart(16, '0')}`;

/** Complete checkpoints, oldest first. The object store lists an object only once its last chunk and its metadata are in. */
export async function listCheckpoints(os: ObjectStore): Promise<CheckpointRef[]> {
  const found: CheckpointRef[] = [];
  for (const info of await os.list()) {
    if (info.deleted || !info.name.startsWith(PREFIX)) continue;
    const seq = Number(info.name.slice(PREFIX.length));
    if (Number.isSafeInteger(seq)) found.push({ name: info.name, seq, size: info.size });
  }
  return found.sort((a, b) => a.seq - b.seq);
}

export async function newestCheckpoint(os: ObjectStore): Promise<CheckpointRef | undefined> {
  return (await listCheckpoints(os)).at(-1);
}

/** One frame: a 4-byte big-endian length, then msgpack. */
function frame(value: unknown): Uint8Array {
  const body = pack(value);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/**
 * Writes the image `rows` at stream sequence `seq` as one object (the object store chunks it); resolves with its size
 * once complete. `paced` runs before each piece and before the end: a throw there stops the upload, and nats.js then
 * purges its chunks and writes no metadata (the compactor stops a holder that lost the role; tests stop a checkpoint
 * half-way).
 */
export async function writeCheckpoint(
  os: ObjectStore,
  header: { seq: number; stream: string; meta?: ReadonlyArray<readonly [string, unknown]> },
  rows: Iterable<ReplicatedOp>,
  paced?: () => Promise<void>,
): Promise<{ bytes: number; rows: number }> {
  const iterator = rows[Symbol.iterator]();
  let count = 0;
  let bytes = 0;
  let started = false;
  let ended = false;
  const PIECE = 256 * 1024;
  const data = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (ended) {
        // The last check before nats.js writes the metadata that makes the checkpoint count.
        if (paced !== undefined) await paced();
        return controller.close();
      }
      const parts: Uint8Array[] = [];
      let size = 0;
      if (!started) {
        started = true;
        const first = frame({ v: VERSION, seq: header.seq, stream: header.stream, ...(header.meta === undefined ? {} : { meta: header.meta }) } satisfies Header);
        parts.push(first);
        size += first.length;
      }
      while (size < PIECE) {
        const next = iterator.next();
        if (next.done === true) {
          const last = frame({ end: count } satisfies Trailer);
          parts.push(last);
          size += last.length;
          ended = true;
          break;
        }
        const part = frame(next.value);
        parts.push(part);
        size += part.length;
        count++;
      }
      const piece = new Uint8Array(size);
      let at = 0;
      for (const part of parts) {
        piece.set(part, at);
        at += part.length;
      }
      bytes += size;
      if (paced !== undefined) await paced();
      controller.enqueue(piece);
    },
  });
  await os.put({ name: checkpointName(header.seq), description: `Plait state checkpoint at stream sequence ${header.seq}` }, data);
  return { bytes, rows: count };
}

/**
 * Reads checkpoint `ref` of stream `stream`, handing its rows to `onRows` in order and in batches; rejects when the
 * object is gone, stalls, belongs to another stream or is cut short (the caller then starts over from the newest one).
 */
export async function readCheckpoint(
  os: ObjectStore,
  ref: CheckpointRef,
  stream: string,
  onRows: (rows: ReplicatedOp[]) => Promise<void>,
  onMeta?: (meta: ReadonlyArray<readonly [string, unknown]>) => void,
): Promise<number> {
  const result = await os.get(ref.name);
  if (result === null) throw new Error(`checkpoint ${ref.name} is gone`);
  const reader = result.data.getReader();
  let buffer = new Uint8Array(0);
  let header: Header | undefined;
  let rows = 0;
  let batch: ReplicatedOp[] = [];
  let trailer: Trailer | undefined;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const stalled = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`checkpoint ${ref.name} stalled (deleted while read?)`)), READ_STALL_MS)));
      const chunk = await Promise.race([reader.read(), stalled]).finally(() => clearTimeout(timer));
      if (chunk.done) break;
      const joined = new Uint8Array(buffer.length + chunk.value.length);
      joined.set(buffer);
      joined.set(chunk.value, buffer.length);
      let at = 0;
      const view = new DataView(joined.buffer);
      while (joined.length - at >= 4) {
        const length = view.getUint32(at);
        if (joined.length - at - 4 < length) break;
        const value: unknown = unpack(joined.subarray(at + 4, at + 4 + length));
        at += 4 + length;
        if (trailer !== undefined) throw new Error(`checkpoint ${ref.name} has data after its end`);
        if (header === undefined) {
          header = value as Header;
          if ((header.v !== VERSION && header.v !== 1) || header.seq !== ref.seq) throw new Error(`checkpoint ${ref.name} has an unknown version or another sequence`);
          if (header.stream !== stream) throw new Error(`checkpoint ${ref.name} belongs to another stream`);
          onMeta?.(header.meta ?? []);
        } else if (Array.isArray(value)) {
          batch.push(value as unknown as ReplicatedOp);
          rows++;
          if (batch.length >= ROWS_PER_BATCH) {
            await onRows(batch);
            batch = [];
          }
        } else trailer = value as Trailer;
      }
      buffer = joined.slice(at);
    }
    await result.error;
  } catch (error) {
    await discard(reader);
    throw error;
  } finally {
    reader.releaseLock();
  }
  if (trailer === undefined || trailer.end !== rows || buffer.length > 0) throw new Error(`checkpoint ${ref.name} is cut short`);
  if (batch.length > 0) await onRows(batch);
  return rows;
}

/**
 * Ends a read given up. A stream the object store is still feeding is read to its end and dropped, not cancelled:
 * nats.js 2.29's `ObjectStore.get` keeps enqueueing the chunks its subscription already holds after a cancel, into a
 * closed controller, which surfaces as an unhandled rejection (a crash under Node's default). Only a stream that
 * stalls (nothing flowing: the object deleted under the read) or failed is cancelled.
 */
async function discard(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), READ_STALL_MS)));
    const next = await Promise.race([reader.read(), stalled])
      .catch((error: unknown) => ({ failed: error }))
      .finally(() => clearTimeout(timer));
    if (next === 'stalled' || 'failed' in next) {
      // A stream that already failed rejects the cancel with the same failure, which the caller throws anyway.
      await reader.cancel().catch((cancelError: unknown) => cancelError);
      return;
    }
    if (next.done) return;
  }
}

/** Deletes every complete checkpoint older than `seq`; returns how many. */
export async function deleteCheckpointsBefore(os: ObjectStore, seq: number): Promise<number> {
  let deleted = 0;
  for (const ref of await listCheckpoints(os)) {
    if (ref.seq >= seq) continue;
    await os.delete(ref.name);
    deleted++;
  }
  return deleted;
}
