// Owns opaque page tokens: a listing's scope plus the position after which the next page starts.
import { invalidArgument } from '../../errors.js';

interface TokenBody {
  /** Which listing the token belongs to (kind and filters), so it is refused on another one. */
  readonly s: string;
  /** Position of the last row handed out: a key element (string id or listing seq). */
  readonly p: string | number;
}

export function encodePageToken(scope: string, position: string | number): string {
  const body: TokenBody = { s: scope, p: position };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** The position in `token`, or INVALID_ARGUMENT naming `field` when the token is not one of this listing's. */
export function decodePageToken(token: string, scope: string, field = 'data.pageToken'): string | number {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalidArgument(`${field} is not a page token of this listing`, { cause: error });
  }
  if (typeof body !== 'object' || body === null) throw invalidArgument(`${field} is not a page token of this listing`);
  const { s, p } = body as Partial<TokenBody>;
  if (s !== scope || (typeof p !== 'string' && typeof p !== 'number')) {
    throw invalidArgument(`${field} is not a page token of this listing (it belongs to another listing or filter)`);
  }
  return p;
}

/** One page of rows and the token for the next page, absent on the last page. */
export interface Page<T> {
  readonly rows: T[];
  readonly nextPageToken?: string;
}
