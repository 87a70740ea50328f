// Owns the ids minted on hot paths: random bytes drawn from a pool and turned into a string by one native call each.
import { randomFillSync } from 'node:crypto';

/**
 * Random bytes drawn 4 KiB at a time (one randomFillSync per ~200 ids instead of one per id: it was a top frame of a
 * REST comment). Each byte is handed out once.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** The offset of `n` fresh random bytes in `pool`. */
function take(n: number): number {
  if (poolAt + n > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const at = poolAt;
  poolAt += n;
  return at;
}

const BASE62 = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'latin1');

/**
 * `length` characters of [A-Za-z0-9], each from one random byte mod 62 (≈5.95 bits each, the slight bias upstream's
 * ids have too). Built in place and read as one string: concatenating characters made a rope of `length` pieces.
 */
export function randomBase62(length: number): string {
  const at = take(length);
  for (let i = at; i < at + length; i++) pool[i] = BASE62[(pool[i] as number) % 62] as number;
  return pool.toString('latin1', at, at + length);
}

/**
 * 32 hex digits, time first: 12 of the millisecond `now` (48 bits) and 20 random (80 bits). Ids minted later sort
 * after, so rows keyed by them (activity rows, webhook messages) append to their range instead of landing on a
 * random B-tree page, which copies that page at every commit (bench/README.md, "Fourteenth session").
 */
export function timeOrderedHex(now: number): string {
  const at = take(10);
  return Math.max(0, Math.floor(now)).toString(16).padStart(12, '0').slice(-12) + pool.toString('hex', at, at + 10);
}

/** Base62 digits in byte order, so that strings of them sort as the numbers they spell. */
const SORTED_BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * `length` (more than 8) characters of [0-9A-Za-z], time first: 8 spell the millisecond `now` in base 62 (62^8 ms
 * reach past the year 8000), the rest are random (randomBase62; 12 of them hold ~71 bits). Ids minted later sort after,
 * as timeOrderedHex's do: an annotation id keys the index by id (`annotation-ids`), where random ids put every new
 * thread's row on a random B-tree page, which LMDB copies at every commit (bench/README.md, "Twenty-first session:
 * annotation ids").
 */
export function timeOrderedBase62(now: number, length: number): string {
  let time = Math.max(0, Math.floor(now));
  let prefix = '';
  for (let i = 0; i < 8; i++) {
    prefix = (SORTED_BASE62[time % 62] as string) + prefix;
    time = Math.floor(time / 62);
  }
  return prefix + randomBase62(length - 8);
}
