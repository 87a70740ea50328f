// Owns walking several LMDB ranges as one, in the order LMDB stores keys, a chunk at a time with event-loop turns between chunks.
import * as lmdb from 'lmdb';
import type { Key } from 'lmdb';
import { CHUNK_ROWS, nextTurn } from './chunked-scan.js';

/** lmdb re-exports ordered-binary's key encoder at runtime; its type declarations leave it out. */
const { keyValueToBuffer } = lmdb as unknown as { keyValueToBuffer?: (key: Key) => Uint8Array };

function encodeKey(key: Key): Uint8Array {
  if (keyValueToBuffer === undefined) throw new Error('lmdb no longer exports keyValueToBuffer: the merged scan cannot order keys');
  return keyValueToBuffer(key);
}

/**
 * Compares two keys in the order LMDB stores them (the bytes of their encoding). lmdb's `compareKeys` compares strings
 * by UTF-16 unit, which differs from the stored order for characters beyond the BMP; a merge must match the rows'.
 */
export function keyOrder(a: Key, b: Key): number {
  return Buffer.compare(encodeKey(a), encodeKey(b));
}

const NO_ORDER = new Uint8Array(0);

interface Head<T> {
  readonly item: T;
  readonly order: Uint8Array;
}

/**
 * Visits the union of the sources `open(after)` answers, in the stored order of `orderKey(item)`, an order key shared
 * by several sources once (the first source's item). Reads CHUNK_ROWS items between turns of the event loop; each
 * chunk closes its cursors and reopens the sources after the last item visited, so no cursor is held across a turn,
 * and a row added meanwhile behind that item is not seen. `open` answers each source in `orderKey` order, strictly
 * after its argument; `visit` answers false to stop.
 */
export async function walkMerged<T>(
  open: (after: T | undefined) => ReadonlyArray<Iterable<T>>,
  orderKey: (item: T) => Key,
  after: T | undefined,
  visit: (item: T) => boolean,
): Promise<void> {
  let from = after;
  for (;;) {
    const iterators = open(from).map((source) => source[Symbol.iterator]());
    // One source is already in order: its items need no encoding to be compared.
    const single = iterators.length === 1;
    const advance = (iterator: Iterator<T>): Head<T> | undefined => {
      const next = iterator.next();
      return next.done === true ? undefined : { item: next.value, order: single ? NO_ORDER : encodeKey(orderKey(next.value)) };
    };
    try {
      const heads = iterators.map(advance);
      let read = 0;
      for (;;) {
        let least: Head<T> | undefined;
        for (const head of heads) if (head !== undefined && (least === undefined || Buffer.compare(head.order, least.order) < 0)) least = head;
        if (least === undefined) return;
        for (const [i, head] of heads.entries()) {
          const iterator = iterators[i];
          if (head === undefined || iterator === undefined || Buffer.compare(head.order, least.order) !== 0) continue;
          heads[i] = advance(iterator);
          read++;
        }
        from = least.item;
        if (!visit(least.item)) return;
        if (read >= CHUNK_ROWS) break;
      }
    } finally {
      for (const iterator of iterators) iterator.return?.();
    }
    await nextTurn();
  }
}
