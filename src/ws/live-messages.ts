// Owns the codec of the live message type (annotation and presence changes) sent on the sync socket next to y-websocket's.
import * as decoding from 'lib0/decoding';
import type { LiveMessage } from '../doc/collab-state.js';
import type { LiveStateValue } from '../doc/live-state.js';
import { EXTENSION_TYPE_MIN, writeExtension } from '../sync/protocol.js';

/**
 * The first Plait extension type (protocol.ts: types >= 100 go only to connections that opened with `?ext=1`).
 * y-websocket uses 0-3 and Hocuspocus 0-9, so neither family reaches it.
 */
export const LIVE_MESSAGE_TYPE = EXTENSION_TYPE_MIN;

const utf8 = new TextEncoder();

/** varUint(100) then the UTF-8 JSON of the LiveMessage as varUint8Array, which is what lib0's writeVarString writes. */
export function encodeLiveMessage(message: LiveMessage): Uint8Array {
  return writeExtension(LIVE_MESSAGE_TYPE, utf8.encode(JSON.stringify(message)));
}

/** Reads a live message; undefined when the bytes are another message type. */
export function decodeLiveMessage(bytes: Uint8Array): LiveMessage | undefined {
  const decoder = decoding.createDecoder(bytes);
  if (decoding.readVarUint(decoder) !== LIVE_MESSAGE_TYPE) return undefined;
  return JSON.parse(decoding.readVarString(decoder)) as LiveMessage;
}

/** Extension frame 101: one live state value (livestate/broadcast), to `ext=1` connections; docs/protocol.md. */
export const LIVE_STATE_MESSAGE_TYPE = EXTENSION_TYPE_MIN + 1;

export function encodeLiveStateMessage(value: LiveStateValue): Uint8Array {
  return writeExtension(LIVE_STATE_MESSAGE_TYPE, utf8.encode(JSON.stringify(value)));
}

/** Reads a live state frame; undefined when the bytes are another message type. */
export function decodeLiveStateMessage(bytes: Uint8Array): LiveStateValue | undefined {
  const decoder = decoding.createDecoder(bytes);
  if (decoding.readVarUint(decoder) !== LIVE_STATE_MESSAGE_TYPE) return undefined;
  return JSON.parse(decoding.readVarString(decoder)) as LiveStateValue;
}
