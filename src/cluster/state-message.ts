// Owns the state stream's names and its message format: one committed transaction, inline or in the blob store.
import { unpack } from 'msgpackr';
import type { ObjectStore } from 'nats';
import type { ReplicatedOp } from '../store/replication.js';
import type { Fence } from './fence.js';

export const STATE_STREAM = 'PLAIT_STATE';
export const STATE_SUBJECT = 'plait.state.tx';
export const BLOB_BUCKET = 'plait_blobs';

/** The largest message put on the stream inline (src/cluster/state-publisher.ts); a larger one goes to the blob store. */
export const INLINE_LIMIT = 1024 * 1024 - 16 * 1024;

/**
 * How many messages a consumer of the state stream asks for at once. At most 32 of up to INLINE_LIMIT each are outstanding
 * (nats.js asks for more only as the outstanding count falls), well under nats-server's per-client max_pending (64 MiB
 * by default). With 512, a node catching up on large group-commit messages was sent more than that while it was busy
 * applying, was closed as a slow consumer, reconnected, asked again, and never caught up (bench/cluster.ts: a cluster
 * started on the stream an earlier one filled). Not `max_bytes`: tried, the catch-up stopped part-way (message 131 of
 * 225) until the start timed out; a pull whose byte budget left is smaller than the next message gets a 409 from the
 * server instead of the message (nats-server issue 5888), and nats.js 2.29 then waited for its heartbeat.
 */
export const STATE_PULL_MESSAGES = 32;

/**
 * A catch-up flushes its batch once it holds this many ops, so one LMDB transaction callback does not hold the event
 * loop for the ops of many messages (one group-commit message alone can carry ~30k: ~70 ms, bench/cluster.ts).
 */
export const APPLY_BATCH_OPS = 5_000;

/** A message on the stream: its origin (node and boot), the origin's counter, and the ops or the blob holding them. */
export interface TxMessage {
  readonly o: string;
  readonly n: number;
  readonly ops?: readonly ReplicatedOp[];
  readonly b?: string;
  /** A claim: the owner of this document (key string) starts a new epoch at this message's stream sequence. */
  readonly c?: string;
  /** With `c`: the lease revision the claim was made under (an older holding's claim is ignored). */
  readonly r?: number;
  /** The epochs the writer held for the documents whose rows `ops` write (src/cluster/fence.ts). */
  readonly f?: Fence;
}

/** A message read whole: its ops fetched from the blob store when the stream carries only the blob's name. */
export interface ReadTx {
  readonly origin: string;
  readonly n: number;
  readonly ops: readonly ReplicatedOp[];
  /** The blob holding the ops, when the message was too large to go inline. */
  readonly blob?: string;
  /** A claim message (no ops): the document and the lease revision it was claimed under. */
  readonly claim?: { readonly document: string; readonly revision: number };
  /** The writer's epochs of the documents its ops write (fencing). */
  readonly fence?: Fence;
  /**
   * The blob was deleted by compaction (its object store keeps the delete marker): this message is a later copy of one
   * already purged, hence applied by every node and folded into the checkpoint (no ops: the caller drops it).
   */
  readonly purgedCopy?: true;
}

/** Decodes one stream message; `fetchOps` false leaves the ops of a blob message unread (the caller skips them). */
export async function readTx(data: Uint8Array, blobs: ObjectStore, seq: number, fetchOps = true): Promise<ReadTx> {
  const tx = unpack(data) as TxMessage;
  const extra = {
    ...(tx.c === undefined ? {} : { claim: { document: tx.c, revision: tx.r ?? 0 } }),
    ...(tx.f === undefined ? {} : { fence: tx.f }),
  };
  if (tx.ops !== undefined || tx.b === undefined) return { origin: tx.o, n: tx.n, ops: tx.ops ?? [], ...extra };
  if (!fetchOps) return { origin: tx.o, n: tx.n, ops: [], blob: tx.b, ...extra };
  const blob = await blobs.getBlob(tx.b);
  if (blob === null) {
    // Blobs are deleted only after a message naming them was purged, and a name (the message id) is only ever shared by
    // copies of one message: so a deleted blob means a resend that landed again past the duplicate window.
    if ((await blobs.info(tx.b))?.deleted === true) return { origin: tx.o, n: tx.n, ops: [], blob: tx.b, purgedCopy: true, ...extra };
    // Never written (or lost with the object store): applying around it would lose a write, so the applier stops here.
    throw new Error(`the blob ${tx.b} of stream message ${seq} is missing`);
  }
  return { origin: tx.o, n: tx.n, ops: (unpack(blob) as TxMessage).ops ?? [], blob: tx.b, ...extra };
}
