// Tests the synchronous ES256 JWT check (src/auth/jwt-check.ts) against jose's jwtVerify on the same tokens, and that UserTokens.verify leaves no async gap.
import { SignJWT, errors as joseErrors, generateKeyPair, jwtVerify, type JWTPayload } from 'jose';
import { KeyObject, sign as signBytes, type webcrypto } from 'node:crypto';
import t from 'tap';
import { checkClaims, parseCompactEs256, signedBy } from '../../src/auth/jwt-check.js';
import { Secrets } from '../../src/auth/secrets.js';
import { UserTokens } from '../../src/auth/user-tokens.js';
import { Store } from '../../src/store/env.js';

type CryptoKey = webcrypto.CryptoKey;

const NOW_MS = Date.UTC(2030, 0, 1);
const NOW = NOW_MS / 1000;

/** Our verdict on a token: the payload's subject, 'expired', or 'invalid' (any refusal before the claims included). */
function ours(token: string, key: KeyObject): string {
  const jwt = parseCompactEs256(token);
  if (jwt === undefined || !signedBy(jwt, key)) return 'invalid';
  const payload = checkClaims(jwt, 'plait', NOW_MS);
  return typeof payload === 'string' ? payload : String(payload['sub']);
}

/** jose's verdict with the options UserTokens used before: issuer, ES256 only, the same clock. */
async function jose(token: string, key: CryptoKey): Promise<string> {
  try {
    const { payload } = await jwtVerify(token, key, { issuer: 'plait', algorithms: ['ES256'], currentDate: new Date(NOW_MS) });
    return String(payload.sub);
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return 'expired';
    if (error instanceof joseErrors.JOSEError) return 'invalid';
    throw error;
  }
}

t.test('the sync check and jose agree on valid, expired, early, mis-issued, malformed and foreign tokens', async (t) => {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const other = await generateKeyPair('ES256');
  const keyObject = KeyObject.from(publicKey);
  const sign = (payload: JWTPayload, header: Record<string, unknown> = {}, key: CryptoKey = privateKey): Promise<string> =>
    new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: 'k1', ...header }).sign(key);
  // jose will not sign a header with a `crit` it does not know; signed by hand.
  const signRaw = (header: Record<string, unknown>, payload: JWTPayload): string => {
    const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${input}.${signBytes('sha256', Buffer.from(input), { key: KeyObject.from(privateKey), dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  };
  const base = { iss: 'plait', sub: 'u1', iat: NOW - 10, exp: NOW + 60 };
  const valid = await sign(base);
  const [h, p, s] = valid.split('.') as [string, string, string];
  const cases: Record<string, string> = {
    valid,
    'exp just passed': await sign({ ...base, exp: NOW }),
    'exp in the past': await sign({ ...base, exp: NOW - 1 }),
    'no exp': await sign({ iss: 'plait', sub: 'u1' }),
    'exp a string': await sign({ ...base, exp: String(NOW + 60) } as unknown as JWTPayload),
    'nbf in the future': await sign({ ...base, nbf: NOW + 1 }),
    'nbf now': await sign({ ...base, nbf: NOW }),
    'iat a string': await sign({ ...base, iat: 'yesterday' } as unknown as JWTPayload),
    'another issuer': await sign({ ...base, iss: 'someone' }),
    'no issuer': await sign({ sub: 'u1', exp: NOW + 60 }),
    'signed by hand': signRaw({ alg: 'ES256', kid: 'k1' }, base),
    'a crit header': signRaw({ alg: 'ES256', kid: 'k1', crit: ['x-plait'], 'x-plait': 1 }, base),
    'a foreign key': await sign(base, {}, other.privateKey),
    'payload swapped': `${h}.${Buffer.from(JSON.stringify({ ...base, sub: 'admin' })).toString('base64url')}.${s}`,
    'signature cut': `${h}.${p}.${s.slice(0, -4)}`,
    'alg none': `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${p}.`,
    'two segments': `${h}.${p}`,
    'payload not an object': `${h}.${Buffer.from('[1]').toString('base64url')}.${s}`,
  };
  for (const [name, token] of Object.entries(cases)) {
    t.equal(ours(token, keyObject), await jose(token, publicKey), `${name}: same verdict as jose`);
  }
  t.equal(ours(valid, keyObject), 'u1', 'a valid token verifies');
  t.equal(ours(cases['signed by hand'] ?? '', keyObject), 'u1', 'the hand signer signs what both accept');
  t.equal(ours(cases['exp just passed'] ?? '', keyObject), 'expired', 'exp equal to now is expired, as in jose');
});

t.test('UserTokens.verify answers within the microtask queue: no thread-pool round trip before a sync upgrade', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const tokens = await UserTokens.open(store, new Secrets(Buffer.alloc(32, 7)));
  const token = await tokens.sign({ userId: 'u1', apiKey: 'key1', userProperties: {}, resources: [] });
  const order: string[] = [];
  // An immediate runs after the microtask queue drains; jose's WebCrypto verify resolved only after it.
  setImmediate(() => order.push('immediate'));
  const claims = await tokens.verify(token);
  order.push('verified');
  t.equal(claims.userId, 'u1');
  t.same(order, ['verified'], 'verified before the event loop turned');
});
