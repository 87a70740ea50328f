// Owns the value format of update-log rows: one Yjs update, or a batch of the updates one commit appended to a store.
import * as decoding from 'lib0/decoding';

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
  const builder = new LogRowBuilder();
  for (const update of updates) builder.add(update);
  return builder.take();
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

/**
 * A store's row for the next commit in the making (the format above, built as the updates come): from the second
 * update on, each is copied in when it is appended, so the log holds no update's own buffer until the commit but the
 * first (a lone update is its own row, as encodeLogRow makes it, without a copy). Held ~100 ms (the group commit's
 * window), every update's buffer outlived V8's young generation and was freed only at the next full collection: ~40k
 * small malloc'd buffers alive at once in a 20-document burst, which left glibc's heap ~20 MB larger after it
 * (bench/README.md, "Twenty-second session: memory after a burst"). The update log reuses a few (`clear`), so their
 * buffers do not churn either.
 */
export class LogRowBuilder {
  /** The batch's body: each update as lib0's writeVarUint8Array writes it (its length as a varuint, then its bytes). */
  private body = EMPTY;
  private length = 0;
  private added = 0;
  /** The first update while it is the only one (then not copied yet). */
  private first: Uint8Array | undefined;

  /** Updates added since the last take(). */
  get count(): number {
    return this.added;
  }

  add(update: Uint8Array): void {
    if (this.added === 0) this.first = update;
    else {
      if (this.first !== undefined) this.copyIn(this.first);
      this.first = undefined;
      this.copyIn(update);
    }
    this.added++;
  }

  /** The row of the updates added (what encodeLogRow makes of them); empties the builder. Only when count > 0. */
  take(): Uint8Array {
    const first = this.first;
    // An update that would read as a batch goes in a batch of one. Yjs encodes none, and a client's bytes are logged only
    // when they changed the document, which such bytes cannot; this keeps the format safe without relying on either.
    if (first !== undefined && !looksLikeBatch(first)) {
      this.clear();
      return first;
    }
    if (first !== undefined) this.copyIn(first);
    const header = new Uint8Array(8);
    header[2] = BATCH_VERSION;
    const headerLength = writeVarUint(header, 3, this.added);
    const row = new Uint8Array(headerLength + this.length);
    row.set(header.subarray(0, headerLength));
    row.set(this.body.subarray(0, this.length), headerLength);
    this.clear();
    return row;
  }

  /** Forgets what was added, keeping its buffer for reuse up to KEPT_BODY_BYTES. */
  clear(): void {
    if (this.body.length > KEPT_BODY_BYTES) this.body = EMPTY;
    this.length = 0;
    this.added = 0;
    this.first = undefined;
  }

  private copyIn(update: Uint8Array): void {
    const needed = this.length + 5 + update.length;
    if (needed > this.body.length) {
      const grown = new Uint8Array(Math.max(needed, this.body.length * 2, 1024));
      grown.set(this.body.subarray(0, this.length));
      this.body = grown;
    }
    this.length = writeVarUint(this.body, this.length, update.length);
    this.body.set(update, this.length);
    this.length += update.length;
  }
}

const EMPTY = new Uint8Array(0);

/** A builder kept for reuse keeps a buffer up to this size (a burst's commit: ~6 KB a store); a larger one is let go. */
const KEPT_BODY_BYTES = 16 * 1024;

/** lib0's varuint (7 bits a byte, low first) at `at`; answers where it ends. */
function writeVarUint(into: Uint8Array, at: number, value: number): number {
  let rest = value;
  let pos = at;
  while (rest > 0x7f) {
    into[pos++] = 0x80 | (rest & 0x7f);
    rest = Math.floor(rest / 128);
  }
  into[pos++] = rest;
  return pos;
}

function looksLikeBatch(row: Uint8Array): boolean {
  return row.length > 2 && row[0] === 0 && row[1] === 0;
}
