// Owns how record databases encode their values: plain msgpack maps, or JSON behind a marker byte for JSON_ROWS.
import { Unpackr } from 'msgpackr';

/** Plain msgpack maps, decoded as plain objects (see `Store.records`): msgpackr options lmdb-js's typings leave out. */
export const MSGPACK_OPTIONS: { readonly useRecords?: boolean; readonly mapsAsObjects?: boolean } = { useRecords: false, mapsAsObjects: true };

/** msgpack never uses 0xc1, so a row that starts with it is JSON and any other row is msgpack. */
const JSON_ROW = 0xc1;

/**
 * Rows written before a database held JSON (schema 10 and older) are msgpack. lmdb-js hands `decode` bytes in a
 * buffer it reuses, so embedded binary is copied out (as lmdb-js's own msgpack decoder does).
 */
const msgpackRows = new Unpackr({ ...MSGPACK_OPTIONS, copyBuffers: true });

/**
 * The lmdb-js encoder of a JSON_ROWS database. Its records are the views Plait answers as JSON (activity logs,
 * notifications and their index rows), so JSON keeps all they hold. `JSON.stringify` is native: in a running server
 * msgpackr's per-character string loop cost 2.5× what it does in isolation once it had seen two-byte strings, and
 * these records are mostly strings (bench/README.md, "Twenty-fifth session: activity and notification rows as JSON").
 * Not `copyBuffers`, so lmdb-js copies nothing back from it; `decode` copies what it reads.
 */
export const jsonRows = {
  encode(value: unknown): Buffer {
    const text: string | undefined = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`a record database's value must encode as JSON, not ${typeof value}`);
    const bytes = Buffer.allocUnsafe(Buffer.byteLength(text) + 1);
    bytes[0] = JSON_ROW;
    bytes.write(text, 1, 'utf8');
    return bytes;
  },
  /**
   * lmdb-js passes its shared read buffer with `length` set to the value's size (not `byteLength`), and a range read
   * passes the size as `end`.
   */
  decode(bytes: Uint8Array, end?: unknown): unknown {
    const size = typeof end === 'number' ? end : bytes.length;
    if (bytes[0] !== JSON_ROW) return msgpackRows.unpack(bytes, { end: size });
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, size).toString('utf8', 1)) as unknown;
  },
};
