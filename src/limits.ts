// Owns the input limits that protect storage and memory (docs/limits.md lists each with where it is enforced).

/**
 * Ids and keys become parts of LMDB keys. LMDB refuses keys over 1978 bytes and the longest key holds three
 * caller ids (plus the API key and short tags), so each id is capped in UTF-8 bytes, not only in characters:
 * 3 x 512 + ~100 bytes stays well under the limit whatever script the id is written in.
 */
export const MAX_ID_CHARS = 256;
export const MAX_ID_BYTES = 512;

/** Nesting of any JSON request body, free-form fields included (CRDT data, metadata, comment context). */
export const MAX_JSON_DEPTH = 64;
/** Nesting of an XML store's elements (REST crdt/add and crdt/update of type xml). */
export const MAX_XML_DEPTH = 64;
/** Encoded size of one free-form JSON field (comment context, attachments, metadata, userProperties). */
export const MAX_FREE_JSON_BYTES = 64 * 1024;

/**
 * Comments one thread may hold, and the default of MAX_COMMENT_THREAD_BYTES: a thread is one record, written whole by
 * each change (src/doc/annotations/thread-size.ts).
 */
export const MAX_COMMENTS_PER_THREAD = 1000;
export const DEFAULT_MAX_COMMENT_THREAD_BYTES = 4 * 1024 * 1024;

/**
 * Default of MAX_PRESENCE_USERS_PER_DOCUMENT: as many users as one presence request may send. Presence is who is on a
 * document now, and every Get Presence and join snapshot answers the whole list (src/doc/presence.ts).
 */
export const DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT = 1000;

/**
 * Default of MAX_PENDING_JOBS_PER_KEY: background jobs (GDPR erasures, document migrations) one API key may have
 * pending or running. Each waiting job is a stored row and, for an erase, a later scan of every row of the key; 2 run
 * per key at a time (JOB_LIMITS), so 100 is 50 rounds of its jobs already promised. A workspace erasing or migrating
 * more at once is paced by the refusal's Retry-After (src/tenant/jobs.ts).
 */
export const DEFAULT_MAX_PENDING_JOBS_PER_KEY = 100;

/** The longest key lmdb-js writes (LMDB's own limit with its default page size); a longer one throws at the put. */
export const LMDB_MAX_KEY_BYTES = 1978;

/** What one number of an array key takes at most (ordered-binary writes a number inside an array in 9 bytes). */
const KEY_NUMBER_BYTES = 9;

/**
 * Whether an array key of these strings and `numbers` numbers, in any order, stays within LMDB_MAX_KEY_BYTES as
 * ordered-binary encodes it: a string takes at most its UTF-8 bytes plus one for each character below 5 (escaped),
 * one leading escape byte and one separator. A change whose every key passes needs no child transaction to undo a
 * refused put (GroupedChange.bounded, src/store/group-commit.ts). Walks the strings once and allocates nothing.
 */
export function keyFits(strings: readonly string[], numbers: number): boolean {
  let bytes = numbers * (KEY_NUMBER_BYTES + 1);
  for (const part of strings) {
    bytes += 2;
    for (let i = 0; i < part.length; i++) {
      const c = part.charCodeAt(i);
      // A lone surrogate takes 3 bytes, as every character from 0x800 up does; a pair is two of them here (6 >= 4).
      bytes += c < 5 ? 2 : c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    }
  }
  return bytes <= LMDB_MAX_KEY_BYTES;
}

/** UTF-8 length of a string, without allocating. */
export function utf8Bytes(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

/**
 * The path of the first place where `value` nests deeper than `maxDepth` (arrays and objects count one level
 * each), or undefined. Iterative: a hostile 100k-deep body must not overflow the stack here. Every REST body passes
 * through it, so the walk allocates nothing per value; the path is built only for a body that is too deep.
 */
export function tooDeep(value: unknown, maxDepth: number, root = 'data'): string | undefined {
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const current = values.pop();
    const depth = depths.pop() as number;
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= maxDepth) return deepPath(value, maxDepth, root);
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        values.push(current[i]);
        depths.push(depth + 1);
      }
    } else {
      for (const key in current) {
        values.push((current as Record<string, unknown>)[key]);
        depths.push(depth + 1);
      }
    }
  }
  return undefined;
}

/** The same walk in the same order, naming each place: only for a value known to be too deep. */
function deepPath(value: unknown, maxDepth: number, root: string): string {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value, depth: 0, path: root }];
  while (stack.length > 0) {
    const next = stack.pop() as { value: unknown; depth: number; path: string };
    const current = next.value;
    if (typeof current !== 'object' || current === null) continue;
    if (next.depth >= maxDepth) return next.path;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) stack.push({ value: current[i], depth: next.depth + 1, path: `${next.path}[${i}]` });
    } else {
      for (const key in current) stack.push({ value: (current as Record<string, unknown>)[key], depth: next.depth + 1, path: `${next.path}.${key}` });
    }
  }
  throw new Error('deepPath: the value is not nested too deep');
}
