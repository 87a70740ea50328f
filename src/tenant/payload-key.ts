// Owns the public key that encrypted webhook payloads are sealed to (`encryptData` + `publicKey`, upstream 2.9, 2.10, 3.1): reading and checking it.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { invalidArgument } from '../errors.js';

/** Below this an RSA key is refused: upstream recommends 2048 bits, and shorter keys are breakable. */
export const MIN_PAYLOAD_KEY_BITS = 2048;

/**
 * The RSA public key `text` holds: base64 of its DER, SubjectPublicKeyInfo or PKCS#1 (upstream: "base64, no PEM
 * headers"); a PEM block is read too. Throws INVALID_ARGUMENT naming `field` when it is no RSA key of at least
 * MIN_PAYLOAD_KEY_BITS bits.
 */
export function readPayloadKey(text: string, field: string): KeyObject {
  const key = parse(text.trim());
  if (key === undefined) throw invalidArgument(`${field} must be an RSA public key: base64 of its DER (SubjectPublicKeyInfo or PKCS#1), without PEM headers`);
  const bits = key.asymmetricKeyType === 'rsa' ? key.asymmetricKeyDetails?.modulusLength : undefined;
  if (bits === undefined) throw invalidArgument(`${field} must be an RSA key (RSA-OAEP seals the payload's AES key), not ${key.asymmetricKeyType ?? 'another kind'}`);
  if (bits < MIN_PAYLOAD_KEY_BITS) throw invalidArgument(`${field} is a ${bits}-bit RSA key; at least ${MIN_PAYLOAD_KEY_BITS} bits are required`);
  return key;
}

/** Keys read at planning, by their text: a handful of workspaces encrypt, and each round of the dispatcher reads its configs anew. */
const known = new Map<string, KeyObject>();
const KNOWN_MAX = 256;

/** readPayloadKey of a stored config's key (checked when it was stored), read once while it is in use. */
export function payloadKeyOf(text: string, field: string): KeyObject {
  let key = known.get(text);
  if (key === undefined) {
    key = readPayloadKey(text, field);
    if (known.size >= KNOWN_MAX) known.clear();
    known.set(text, key);
  }
  return key;
}

function parse(text: string): KeyObject | undefined {
  if (text.startsWith('-----BEGIN')) return attempt(() => createPublicKey(text));
  if (!/^[A-Za-z0-9+/=\s]+$/.test(text)) return undefined;
  const der = Buffer.from(text, 'base64');
  return attempt(() => createPublicKey({ key: der, format: 'der', type: 'spki' })) ?? attempt(() => createPublicKey({ key: der, format: 'der', type: 'pkcs1' }));
}

/** The key, or undefined when node:crypto cannot read it (the caller names the field in its refusal). */
function attempt(read: () => KeyObject): KeyObject | undefined {
  try {
    return read();
  } catch (error) {
    if (error instanceof Error) return undefined;
    throw error;
  }
}
