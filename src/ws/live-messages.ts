// Owns the codec of the live message type (annotation and presence changes) sent on the sync socket next to y-websocket's.
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import type { LiveMessage } from '../doc/collab-state.js';

/**
 * Message type number, after y-websocket's 0 sync, 1 awareness, 2 auth, 3 query-awareness and Hocuspocus's
 * 4-9; high enough that neither family will reach it. Clients that do not know it ignore it (y-websocket logs it).
 */
export const LIVE_MESSAGE_TYPE = 100;

/** varUint(100) then varString(JSON of LiveMessage): the same framing as y-websocket's own messages. */
export function encodeLiveMessage(message: LiveMessage): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, LIVE_MESSAGE_TYPE);
  encoding.writeVarString(encoder, JSON.stringify(message));
  return encoding.toUint8Array(encoder);
}

/** Reads a live message; undefined when the bytes are another message type. */
export function decodeLiveMessage(bytes: Uint8Array): LiveMessage | undefined {
  const decoder = decoding.createDecoder(bytes);
  if (decoding.readVarUint(decoder) !== LIVE_MESSAGE_TYPE) return undefined;
  return JSON.parse(decoding.readVarString(decoder)) as LiveMessage;
}
