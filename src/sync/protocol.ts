// Owns the sync wire format (core-owned, used by src/doc and the src/ws edge): pure read/write functions for the y-websocket message types and Plait's additions.
import * as encoding from 'lib0/encoding';
import * as Y from 'yjs';
import { checkUpdate } from './update-check.js';

/** Top-level message types (first varuint of every frame), as y-websocket numbers them. */
export const MESSAGE = { SYNC: 0, AWARENESS: 1, AUTH: 2, QUERY_AWARENESS: 3 } as const;
/** Sub-types of a SYNC message (y-protocols/sync). */
export const SYNC = { STEP1: 0, STEP2: 1, UPDATE: 2 } as const;
/**
 * Sub-types of an AUTH message. 0 is y-protocols' permission-denied; 1 is Plait's read-only notice, which stock
 * clients skip silently because y-protocols' readAuthMessage ignores sub-types it does not know.
 */
export const AUTH = { PERMISSION_DENIED: 0, READ_ONLY: 1 } as const;
/**
 * Top-level types from this value up are Plait extension messages (presence, annotations). They are sent only to
 * connections that opted in with `?ext=1`, because a stock client logs every unknown type as an error.
 */
export const EXTENSION_TYPE_MIN = 100;

export interface AwarenessEntry {
  readonly clientId: number;
  readonly clock: number;
  /** Parsed JSON state; null means the client went offline. */
  readonly state: unknown;
}

/** A client frame after validation. `malformed` frames are never applied to anything. */
export type ClientMessage =
  | { readonly kind: 'sync-step1'; readonly stateVector: Uint8Array }
  | { readonly kind: 'sync-step2'; readonly update: Uint8Array }
  /**
   * `frame` is the whole frame as received (validated, so exactly `[SYNC, UPDATE, update]`): the fan-out publishes it
   * unchanged when it has nothing to merge it with. Absent when a message is built by hand (tests).
   */
  | { readonly kind: 'update'; readonly update: Uint8Array; readonly frame?: Uint8Array }
  | { readonly kind: 'awareness'; readonly update: Uint8Array; readonly entries: readonly AwarenessEntry[] }
  | { readonly kind: 'query-awareness' }
  | { readonly kind: 'auth' }
  | { readonly kind: 'malformed'; readonly reason: string };

/** A bounds-checked reader: every read returns undefined instead of running past the end (lib0 would throw or clamp). */
class Reader {
  private pos = 0;
  constructor(readonly bytes: Uint8Array) {}

  get done(): boolean {
    return this.pos === this.bytes.length;
  }

  varUint(): number | undefined {
    let value = 0;
    let scale = 1;
    while (this.pos < this.bytes.length) {
      const byte = this.bytes[this.pos++] ?? 0;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
      // lib0 never writes more than 53 bits; a longer run is garbage, not a number.
      if (scale > 2 ** 53) return undefined;
    }
    return undefined;
  }

  varBytes(): Uint8Array | undefined {
    const length = this.varUint();
    if (length === undefined || length > this.bytes.length - this.pos) return undefined;
    const slice = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    return slice;
  }
}

const malformed = (reason: string): ClientMessage => ({ kind: 'malformed', reason });
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes and validates one client frame completely before anything acts on it: the envelope must be consumed
 * exactly, a state vector must parse, an update must decode as a Yjs update, an awareness update must carry JSON.
 */
export function readClientMessage(bytes: Uint8Array): ClientMessage {
  const reader = new Reader(bytes);
  const type = reader.varUint();
  switch (type) {
    case MESSAGE.SYNC:
      return readSync(reader);
    case MESSAGE.AWARENESS: {
      const update = reader.varBytes();
      if (update === undefined || !reader.done) return malformed('truncated awareness message');
      const entries = readAwarenessEntries(update);
      return entries === undefined ? malformed('awareness update does not decode') : { kind: 'awareness', update, entries };
    }
    case MESSAGE.AUTH:
      // Clients have nothing to say on the auth channel; accepted and ignored like y-websocket's server does.
      return reader.varUint() === undefined ? malformed('truncated auth message') : { kind: 'auth' };
    case MESSAGE.QUERY_AWARENESS:
      return reader.done ? { kind: 'query-awareness' } : malformed('query-awareness carries no payload');
    case undefined:
      return malformed('empty or truncated frame');
    default:
      return malformed(`unknown message type ${type}`);
  }
}

function readSync(reader: Reader): ClientMessage {
  const step = reader.varUint();
  const payload = reader.varBytes();
  if (step === undefined || payload === undefined || !reader.done) return malformed('truncated sync message');
  switch (step) {
    case SYNC.STEP1:
      return isStateVector(payload) ? { kind: 'sync-step1', stateVector: payload } : malformed('state vector does not decode');
    case SYNC.STEP2:
      return isUpdate(payload) ? { kind: 'sync-step2', update: payload } : malformed('update does not decode');
    case SYNC.UPDATE:
      return isUpdate(payload) ? { kind: 'update', update: payload, frame: reader.bytes } : malformed('update does not decode');
    default:
      return malformed(`unknown sync message type ${step}`);
  }
}

function isStateVector(bytes: Uint8Array): boolean {
  const reader = new Reader(bytes);
  const count = reader.varUint();
  if (count === undefined) return false;
  for (let i = 0; i < count; i++) {
    if (reader.varUint() === undefined || reader.varUint() === undefined) return false;
  }
  return reader.done;
}

/**
 * Walked without building anything first (src/sync/update-check.ts: decoding built every struct and its content, a
 * large share of the server's work per update; issue 18). Where the walk cannot tell, Yjs decodes: it has no validating
 * parser that reports instead of throwing, so a throw there is the answer "not an update".
 */
function isUpdate(bytes: Uint8Array): boolean {
  const checked = checkUpdate(bytes);
  if (checked !== 'unsure') return checked === 'valid';
  try {
    Y.decodeUpdate(bytes);
    return true;
  } catch {
    // Decoding garbage throws (lib0 "Unexpected end of array", TypeError on unknown content refs): not an update.
    return false;
  }
}

function readAwarenessEntries(update: Uint8Array): AwarenessEntry[] | undefined {
  const reader = new Reader(update);
  const count = reader.varUint();
  if (count === undefined) return undefined;
  const entries: AwarenessEntry[] = [];
  for (let i = 0; i < count; i++) {
    const clientId = reader.varUint();
    const clock = reader.varUint();
    const json = reader.varBytes();
    if (clientId === undefined || clock === undefined || json === undefined) return undefined;
    const state = parseJson(json);
    if (state === invalidJson) return undefined;
    entries.push({ clientId, clock, state });
  }
  return reader.done ? entries : undefined;
}

const invalidJson = Symbol('invalid JSON');

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(utf8.decode(bytes)) as unknown;
  } catch (error) {
    // TypeError: invalid UTF-8; SyntaxError: invalid JSON. Anything else is a bug and propagates.
    if (error instanceof SyntaxError || error instanceof TypeError) return invalidJson;
    throw error;
  }
}

function frame(write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder();
  write(encoder);
  return encoding.toUint8Array(encoder);
}

export const writeSyncStep1 = (stateVector: Uint8Array): Uint8Array =>
  frame((e) => {
    encoding.writeVarUint(e, MESSAGE.SYNC);
    encoding.writeVarUint(e, SYNC.STEP1);
    encoding.writeVarUint8Array(e, stateVector);
  });

export const writeSyncStep2 = (update: Uint8Array): Uint8Array =>
  frame((e) => {
    encoding.writeVarUint(e, MESSAGE.SYNC);
    encoding.writeVarUint(e, SYNC.STEP2);
    encoding.writeVarUint8Array(e, update);
  });

export const writeUpdate = (update: Uint8Array): Uint8Array =>
  frame((e) => {
    encoding.writeVarUint(e, MESSAGE.SYNC);
    encoding.writeVarUint(e, SYNC.UPDATE);
    encoding.writeVarUint8Array(e, update);
  });

export const writeAwareness = (update: Uint8Array): Uint8Array =>
  frame((e) => {
    encoding.writeVarUint(e, MESSAGE.AWARENESS);
    encoding.writeVarUint8Array(e, update);
  });

export const writePermissionDenied = (reason: string): Uint8Array =>
  frame((e) => {
    encoding.writeVarUint(e, MESSAGE.AUTH);
    encoding.writeVarUint(e, AUTH.PERMISSION_DENIED);
    encoding.writeVarString(e, reason);
  });

export const writeReadOnly = (reason: string): Uint8Array =>
  frame((e) => {
    encoding.writeVarUint(e, MESSAGE.AUTH);
    encoding.writeVarUint(e, AUTH.READ_ONLY);
    encoding.writeVarString(e, reason);
  });

/** An extension frame: the type (>= EXTENSION_TYPE_MIN) then an opaque payload. */
export const writeExtension = (type: number, payload: Uint8Array): Uint8Array =>
  frame((e) => {
    if (type < EXTENSION_TYPE_MIN) throw new RangeError(`extension message types start at ${EXTENSION_TYPE_MIN}, got ${type}`);
    encoding.writeVarUint(e, type);
    encoding.writeVarUint8Array(e, payload);
  });

/** The top-level type of an outgoing frame, to route extension frames only to connections that asked for them. */
export function messageType(bytes: Uint8Array): number | undefined {
  return new Reader(bytes).varUint();
}

/** A Yjs V1 update with no structs and an empty delete set: what a client with nothing new sends as SyncStep2. */
export function isEmptyUpdate(update: Uint8Array): boolean {
  return update.length === 2 && update[0] === 0 && update[1] === 0;
}
