// Owns the value format of update-log rows: one Yjs update, or a batch of the updates one commit appended to a store.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';

/**
 * A batch row starts with the bytes of an empty Yjs update (no structs, no deletes: `[0, 0]`) and goes on. Yjs never
 * writes anything after those two bytes, so no update it encodes starts so and is longer: a row that does is a batch.
 * And a batch given to Yjs as an update by mistake is read as the empty update it begins with, changing nothing.
 */
const BATCH_VERSION = 1;

/**
 * One row for the updates one commit appended to a store: the update itself when there is one, else a batch of them
 * as they came. Not Y.mergeUpdates: a merge at every commit was among the largest JavaScript costs of a fan-out burst
 * (docs/durability.md, "Layout"), where a batch is a copy, and a load merges the tail anyway.
 */
export function encodeLogRow(updates: readonly Uint8Array[]): Uint8Array {
  const [only] = updates;
  // An update that would read as a batch goes in a batch of one. Yjs encodes none, and a client's bytes are logged only
  // when they changed the document, which such bytes cannot; this keeps the format safe without relying on either.
  if (updates.length === 1 && only !== undefined && !looksLikeBatch(only)) return only;
  const encoder = encoding.createEncoder();
  encoding.writeUint8(encoder, 0);
  encoding.writeUint8(encoder, 0);
  encoding.writeUint8(encoder, BATCH_VERSION);
  encoding.writeVarUint(encoder, updates.length);
  for (const update of updates) encoding.writeVarUint8Array(encoder, update);
  return encoding.toUint8Array(encoder);
}

/**
 * The updates of one stored row, in the order they were appended. Throws, naming what is wrong, on a batch it cannot
 * read (a damaged row: loading around it would lose updates silently).
 */
export function decodeLogRow(row: Uint8Array): Uint8Array[] {
  if (!looksLikeBatch(row)) return [row];
  const decoder = decoding.createDecoder(row);
  decoding.skip8(decoder);
  decoding.skip8(decoder);
  const version = decoding.readUint8(decoder);
  if (version !== BATCH_VERSION) throw new Error(`update-log row: batch version ${version} is not readable by this build (${BATCH_VERSION})`);
  const count = decoding.readVarUint(decoder);
  const updates: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const length = decoding.readVarUint(decoder);
    if (length > row.length - decoder.pos) throw new Error(`update-log row: update ${i} of ${count} runs past the row's end`);
    updates.push(decoding.readUint8Array(decoder, length));
  }
  if (decoder.pos !== row.length) throw new Error(`update-log row: ${row.length - decoder.pos} bytes after the batch's ${count} updates`);
  return updates;
}

function looksLikeBatch(row: Uint8Array): boolean {
  return row.length > 2 && row[0] === 0 && row[1] === 0;
}
