// Owns checking a compact ES256 JWT synchronously with node:crypto: its shape, its signature and the registered claims, as jose's jwtVerify does.
import { verify as verifySignature, type KeyObject } from 'node:crypto';

/**
 * Why not jose's jwtVerify: jose 6 verifies with WebCrypto, whose verify runs on the libuv thread pool, so every
 * check was an async gap. The sync upgrade (src/ws/behavior.ts) answers inside uWS's callback only when admission
 * has none; after a gap, uWS.js 20.30 writes the 101 response uncorked (one send per header piece) and warns.
 * jose still signs (src/auth/user-tokens.ts); test/auth/jwt-check.test.ts holds this check to jose's verdicts.
 */

const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** An ES256 signature in JWS form: r and s, 32 bytes each. */
const ES256_SIGNATURE_BYTES = 64;

export interface CompactJwt {
  readonly kid: string | undefined;
  readonly signingInput: string;
  readonly payloadSegment: string;
  readonly signature: Buffer;
}

/** Splits a compact JWS with an ES256 header; undefined when it is not one (tokens with `crit` or `b64` included: Plait never signs those). */
export function parseCompactEs256(token: string): CompactJwt | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [headerSegment = '', payloadSegment = '', signatureSegment = ''] = parts;
  if (!SEGMENT.test(headerSegment) || !SEGMENT.test(payloadSegment) || !SEGMENT.test(signatureSegment)) return undefined;
  const header = jsonObject(headerSegment);
  if (header === undefined || header['alg'] !== 'ES256' || 'crit' in header || 'b64' in header) return undefined;
  const kid = header['kid'];
  if (kid !== undefined && typeof kid !== 'string') return undefined;
  const signature = Buffer.from(signatureSegment, 'base64url');
  if (signature.length !== ES256_SIGNATURE_BYTES) return undefined;
  return { kid, signingInput: `${headerSegment}.${payloadSegment}`, payloadSegment, signature };
}

/** True when the token's signature is `key`'s (P-256, SHA-256) over its first two segments. */
export function signedBy(jwt: CompactJwt, key: KeyObject): boolean {
  return verifySignature('sha256', Buffer.from(jwt.signingInput), { key, dsaEncoding: 'ieee-p1363' }, jwt.signature);
}

/**
 * The payload when it is a JSON object that passes jose's claim checks for our options (no clock tolerance): `iss`
 * present and equal to `issuer`; `iat`, when present, a number; `nbf`, when present, a number not after now; `exp`,
 * when present, a number after now. 'expired' or 'invalid' otherwise.
 */
export function checkClaims(jwt: CompactJwt, issuer: string, nowMs: number): Record<string, unknown> | 'expired' | 'invalid' {
  const payload = jsonObject(jwt.payloadSegment);
  if (payload === undefined || payload['iss'] !== issuer) return 'invalid';
  const now = Math.floor(nowMs / 1000);
  const { iat, nbf, exp } = payload;
  if (iat !== undefined && typeof iat !== 'number') return 'invalid';
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now)) return 'invalid';
  if (exp !== undefined) {
    if (typeof exp !== 'number') return 'invalid';
    if (exp <= now) return 'expired';
  }
  return payload;
}

function jsonObject(segment: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch (error) {
    // Not JSON: the token is malformed, which the caller reports as invalid.
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
