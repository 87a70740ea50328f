// Owns reading the sync URL (/sync/{organizationId}/{documentId}/{editorId}?token=&type=&contentKey=&ext=) and the token subprotocol.
import { STORE_TYPES } from '../doc/crdt.js';
import type { StoreType } from '../store/snapshots.js';
import { AppError, invalidArgument, unauthenticated } from '../errors.js';
import { MAX_ID_BYTES, MAX_ID_CHARS, utf8Bytes } from '../limits.js';

export const SYNC_PREFIX = '/sync/';

export interface SyncTarget {
  readonly organizationId: string;
  readonly documentId: string;
  readonly editorId: string;
  readonly token: string;
  readonly type?: StoreType;
  readonly contentKey?: string;
  /** `ext=1`: the client understands Plait extension frames (types >= 100). */
  readonly extensions: boolean;
}

// Control characters would blur the LMDB key layout (ordered-binary separates array elements with byte 30).
const CONTROL = /[\u0000-\u001f\u007f]/;

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch (error) {
    if (error instanceof URIError) return undefined;
    throw error;
  }
}

function checkId(value: string | undefined, name: string): string {
  if (value === undefined) throw invalidArgument(`the ${name} path segment is not valid percent-encoding`);
  checkSize(value, `the ${name} path segment`);
  if (CONTROL.test(value)) throw invalidArgument(`the ${name} path segment must not contain control characters`);
  return value;
}

/** The same limits as the REST schemas' ids (src/http/schemas/common.ts): characters, and bytes for LMDB keys. */
function checkSize(value: string, what: string): void {
  if (value.length === 0 || value.length > MAX_ID_CHARS) throw invalidArgument(`${what} must be 1 to ${MAX_ID_CHARS} characters`);
  if (utf8Bytes(value) > MAX_ID_BYTES) throw invalidArgument(`${what} must be at most ${MAX_ID_BYTES} bytes in UTF-8`);
}

/** The subprotocol a client offers to carry its user token out of the URL: `plait.token.<JWT>` (JWTs are valid token chars). */
export const TOKEN_PROTOCOL_PREFIX = 'plait.token.';
/** The subprotocol the server answers with when the client offers it beside its token entry. */
export const SYNC_PROTOCOL = 'plait';

function offeredProtocols(header: string): string[] {
  return header === '' ? [] : header.split(',').map((entry) => entry.trim());
}

/** The user token from `Sec-WebSocket-Protocol: plait, plait.token.<JWT>`, or '' when none is offered. */
export function tokenFromProtocols(header: string): string {
  const entry = offeredProtocols(header).find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
  return entry === undefined ? '' : entry.slice(TOKEN_PROTOCOL_PREFIX.length);
}

/**
 * The subprotocol the upgrade answers with. Browsers fail a connection whose answer is not one they offered, so a
 * client sending its token this way gets `plait` back when it offered it, else its token entry; other headers are
 * answered as before (echoed).
 */
export function answerProtocol(header: string): string {
  const offered = offeredProtocols(header);
  const token = offered.find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
  if (token === undefined) return header;
  return offered.includes(SYNC_PROTOCOL) ? SYNC_PROTOCOL : token;
}

/**
 * Parses the upgrade URL; the token comes from `?token=` or else from the `Sec-WebSocket-Protocol` header.
 * Throws INVALID_ARGUMENT (400) or UNAUTHENTICATED (401) naming what is wrong.
 */
export function parseSyncTarget(url: string, query: string, protocols = ''): SyncTarget {
  if (!url.startsWith(SYNC_PREFIX)) throw new AppError('NOT_FOUND', `no sync endpoint at ${url}`);
  const segments = url.slice(SYNC_PREFIX.length).split('/');
  if (segments.length !== 3) {
    throw invalidArgument('the sync URL must be /sync/{organizationId}/{documentId}/{editorId}, each segment percent-encoded');
  }
  const [org, doc, editor] = segments.map(decodeSegment);
  const params = new URLSearchParams(query);
  const token = params.get('token') || tokenFromProtocols(protocols);
  if (token === '') {
    throw unauthenticated(
      'a user JWT from /v2/auth/generate_token is required, in the token query parameter or as the subprotocol plait.token.<JWT>',
    );
  }
  const type = params.get('type');
  if (type !== null && !STORE_TYPES.includes(type as StoreType)) {
    throw invalidArgument(`the type query parameter must be one of ${STORE_TYPES.join(', ')}, got "${type}"`);
  }
  const contentKey = params.get('contentKey');
  if (contentKey !== null) checkSize(contentKey, 'the contentKey query parameter');
  return {
    organizationId: checkId(org, 'organizationId'),
    documentId: checkId(doc, 'documentId'),
    editorId: checkId(editor, 'editorId'),
    token,
    extensions: params.get('ext') === '1',
    ...(type === null ? {} : { type: type as StoreType }),
    ...(contentKey === null ? {} : { contentKey }),
  };
}
