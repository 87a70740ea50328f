// Owns how record databases encode their values: plain msgpack maps, or JSON behind a marker byte for JSON_ROWS.
import type { Database, Key } from 'lmdb';

/** Plain msgpack maps, decoded as plain objects (see `Store.records`): msgpackr options lmdb-js's typings leave out. */
export const MSGPACK_OPTIONS: { readonly useRecords?: boolean; readonly mapsAsObjects?: boolean } = { useRecords: false, mapsAsObjects: true };

/** msgpack never uses 0xc1, so a row that starts with it is JSON and any other row is msgpack. */
const JSON_ROW = 0xc1;

/** What lmdb-js calls to read a value: `end` is the value's size in a range read. */
interface RowDecoder {
  decode(bytes: Uint8Array, end?: unknown): unknown;
}

/**
 * The lmdb-js encoder of a JSON_ROWS database. Its records are the views Plait answers as JSON (activity logs,
 * notifications), so JSON keeps all they hold. `JSON.stringify` is native: in a running server msgpackr's
 * per-character string loop cost 2.5× what it does in isolation once it had seen two-byte strings, and these records
 * are mostly strings (bench/README.md, "Twenty-fifth session: activity and notification records as JSON"). Not
 * `copyBuffers`, so lmdb-js copies nothing back from it; `decode` copies what it reads.
 *
 * Rows written before (schema 10 and older) are msgpack, read by the msgpack decoder lmdb-js made for `msgpackDb`, a
 * record database opened with MSGPACK_OPTIONS (it copies embedded binary out of lmdb-js's reused read buffer). Not a
 * decoder of Plait's own: msgpackr's second copy (Plait's own dependency, bundled) loaded at every start held ~0.5 MB
 * more idle memory.
 */
export function jsonRows(msgpackDb: Database<unknown, Key>): RowDecoder & { encode(value: unknown): Buffer } {
  // lmdb-js's declarations type a database's encoder as `any`.
  const msgpack = (msgpackDb as { readonly encoder?: RowDecoder }).encoder;
  if (msgpack === undefined) throw new Error('jsonRows needs a database lmdb-js encodes as msgpack');
  return { encode: encodeJson, decode: (bytes, end) => decodeRow(msgpack, bytes, end) };
}

function encodeJson(value: unknown): Buffer {
  const text: string | undefined = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`a record database's value must encode as JSON, not ${typeof value}`);
  const bytes = Buffer.allocUnsafe(Buffer.byteLength(text) + 1);
  bytes[0] = JSON_ROW;
  bytes.write(text, 1, 'utf8');
  return bytes;
}

/**
 * lmdb-js passes its shared read buffer with `length` set to the value's size (not `byteLength`), and a range read
 * passes the size as `end`.
 */
function decodeRow(msgpack: RowDecoder, bytes: Uint8Array, end: unknown): unknown {
  if (bytes[0] !== JSON_ROW) return msgpack.decode(bytes, end);
  const size = typeof end === 'number' ? end : bytes.length;
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, size).toString('utf8', 1)) as unknown;
}
