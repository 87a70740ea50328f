// Owns cursor paging of timestamped records (notifications, activity logs): order, page size, opaque page token.
import { invalidArgument } from '../errors.js';

export interface Timestamped {
  readonly id: string;
  readonly timestamp: number;
}

export interface Page<T> {
  readonly rows: T[];
  readonly pageToken?: string;
}

/** Sorts by (timestamp, id) and returns the page after the token's position; the token names the last row sent. */
export function page<T extends Timestamped>(rows: readonly T[], options: { readonly pageSize: number; readonly pageToken?: string | undefined; readonly order?: 'asc' | 'desc' | undefined }): Page<T> {
  const sign = options.order === 'asc' ? 1 : -1;
  const compare = (a: Timestamped, b: Timestamped): number => sign * (a.timestamp - b.timestamp || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const sorted = [...rows].sort(compare);
  let start = 0;
  if (options.pageToken !== undefined) {
    const after = afterToken(options.pageToken);
    start = sorted.findIndex((row) => compare(row, after) > 0);
    if (start === -1) start = sorted.length;
  }
  const slice = sorted.slice(start, start + options.pageSize);
  const last = slice.at(-1);
  const more = start + options.pageSize < sorted.length;
  return more && last !== undefined ? { rows: slice, pageToken: encodeToken(last) } : { rows: slice };
}

/** The token naming `last` as the last row sent. */
export function encodeToken(last: Timestamped): string {
  return Buffer.from(JSON.stringify([last.timestamp, last.id])).toString('base64url');
}

/** The row a token names (INVALID_ARGUMENT naming data.pageToken when it is not such a token). */
export function afterToken(token: string): Timestamped {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && typeof parsed[0] === 'number' && typeof parsed[1] === 'string') return { timestamp: parsed[0], id: parsed[1] };
  } catch (error) {
    throw invalidArgument('data.pageToken is not a page token returned by this operation', { cause: error });
  }
  throw invalidArgument('data.pageToken is not a page token returned by this operation');
}
