// Owns the state stream's names and its message format: one committed transaction, inline or in the blob store.
import { unpack } from 'msgpackr';
import type { ObjectStore } from 'nats';
import type { ReplicatedOp } from '../store/replication.js';

export const STATE_STREAM = 'PLAIT_STATE';
export const STATE_SUBJECT = 'plait.state.tx';
export const BLOB_BUCKET = 'plait_blobs';

/** A message on the stream: its origin (node and boot), the origin's counter, and the ops or the blob holding them. */
export interface TxMessage {
  readonly o: string;
  readonly n: number;
  readonly ops?: readonly ReplicatedOp[];
  readonly b?: string;
}

/** A message read whole: its ops fetched from the blob store when the stream carries only the blob's name. */
export interface ReadTx {
  readonly origin: string;
  readonly n: number;
  readonly ops: readonly ReplicatedOp[];
  /** The blob holding the ops, when the message was too large to go inline. */
  readonly blob?: string;
}

/** Decodes one stream message; `fetchOps` false leaves the ops of a blob message unread (the caller skips them). */
export async function readTx(data: Uint8Array, blobs: ObjectStore, seq: number, fetchOps = true): Promise<ReadTx> {
  const tx = unpack(data) as TxMessage;
  if (tx.ops !== undefined || tx.b === undefined) return { origin: tx.o, n: tx.n, ops: tx.ops ?? [] };
  if (!fetchOps) return { origin: tx.o, n: tx.n, ops: [], blob: tx.b };
  const blob = await blobs.getBlob(tx.b);
  if (blob === null) throw new Error(`the blob ${tx.b} of stream message ${seq} is missing`);
  return { origin: tx.o, n: tx.n, ops: (unpack(blob) as TxMessage).ops ?? [], blob: tx.b };
}
