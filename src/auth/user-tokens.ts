// Owns user JWTs: the ES256 signing keys (generated once, private half sealed at rest), minting, JWKS and verification.
import { SignJWT, exportJWK, generateKeyPair, importJWK, jwtVerify, errors as joseErrors, type JWK, type JWTPayload } from 'jose';
import type { webcrypto } from 'node:crypto';
import type { Database, Key } from 'lmdb';
import { AppError, unauthenticated } from '../errors.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { randomId, type Secrets } from './secrets.js';

type CryptoKey = webcrypto.CryptoKey;

export const USER_TOKEN_LIFETIME_SECONDS = 48 * 60 * 60;
const ALG = 'ES256';
const ISSUER = 'plait';

export type AccessRole = 'viewer' | 'editor';

/** A permission resource carried in the token (spec 2.2). */
export interface TokenResource {
  type: 'organization' | 'folder' | 'document';
  id: string;
  organizationId?: string;
  accessRole?: AccessRole;
  expiresAt?: number;
}

export interface UserProperties {
  name?: string;
  email?: string;
  isAdmin?: boolean;
  [custom: string]: unknown;
}

export interface UserClaims {
  readonly userId: string;
  readonly apiKey: string;
  readonly userProperties: UserProperties;
  readonly resources: readonly TokenResource[];
  /** Seconds since epoch. */
  readonly expiresAt: number;
}

interface SigningKeyRecord {
  kid: string;
  alg: typeof ALG;
  publicJwk: JWK;
  sealedPrivateJwk: string;
  createdAt: number;
  /** Set when rotated out: no longer signs, still verifies until every token it signed has expired. */
  retiredAt?: number;
}

interface LoadedKey {
  record: SigningKeyRecord;
  privateKey?: CryptoKey;
  publicKey: CryptoKey;
}

export class UserTokens {
  private readonly keys = new Map<string, LoadedKey>();
  private current: LoadedKey | undefined;

  private constructor(private readonly db: Database<SigningKeyRecord, Key>, private readonly secrets: Secrets) {}

  /** Loads the signing keys, creating the first one on a fresh data directory. */
  static async open(store: Store, secrets: Secrets): Promise<UserTokens> {
    const tokens = new UserTokens(store.records<SigningKeyRecord>(DB.signingKeys), secrets);
    for (const { value } of tokens.db.getRange()) await tokens.load(value);
    if (tokens.current === undefined) await tokens.rotate();
    return tokens;
  }

  /** Starts signing with a fresh key; earlier keys keep verifying the tokens they signed until those expire. */
  async rotate(): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true });
    const kid = `${new Date().toISOString().slice(0, 10)}-${randomId(8)}`;
    const record: SigningKeyRecord = {
      kid,
      alg: ALG,
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' },
      sealedPrivateJwk: this.secrets.encrypt(JSON.stringify(await exportJWK(privateKey))),
      createdAt: Date.now(),
    };
    const now = Date.now();
    const previous = this.current;
    await this.db.transaction(() => {
      if (previous !== undefined) this.db.put(previous.record.kid, { ...previous.record, retiredAt: now });
      this.db.put(kid, record);
    });
    if (previous !== undefined) previous.record = { ...previous.record, retiredAt: now };
    await this.load(record);
    return kid;
  }

  private async load(record: SigningKeyRecord): Promise<void> {
    if (record.retiredAt !== undefined && record.retiredAt + USER_TOKEN_LIFETIME_SECONDS * 1000 < Date.now()) return;
    const publicKey = (await importJWK(record.publicJwk, ALG)) as CryptoKey;
    const loaded: LoadedKey = { record, publicKey };
    if (record.retiredAt === undefined) {
      loaded.privateKey = (await importJWK(JSON.parse(this.secrets.decrypt(record.sealedPrivateJwk)) as JWK, ALG)) as CryptoKey;
      if (this.current === undefined || this.current.record.createdAt < record.createdAt) this.current = loaded;
    }
    this.keys.set(record.kid, loaded);
  }

  async sign(claims: Omit<UserClaims, 'expiresAt'>): Promise<string> {
    const key = this.current;
    if (key?.privateKey === undefined) throw new AppError('INTERNAL', 'no signing key is loaded');
    return new SignJWT({ apiKey: claims.apiKey, user: claims.userProperties, permissions: { resources: claims.resources } })
      .setProtectedHeader({ alg: ALG, kid: key.record.kid, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(claims.userId)
      .setIssuedAt()
      .setExpirationTime(`${USER_TOKEN_LIFETIME_SECONDS}s`)
      .sign(key.privateKey);
  }

  /** The public keys as a JWKS document, for GET /.well-known/jwks.json. */
  jwks(): { keys: JWK[] } {
    return { keys: [...this.keys.values()].map((key) => key.record.publicJwk) };
  }

  /** Verifies signature, issuer and expiry; throws UNAUTHENTICATED saying which check failed. */
  async verify(token: string): Promise<UserClaims> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, (header) => this.publicKeyFor(header.kid), { issuer: ISSUER, algorithms: [ALG] }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw unauthenticated('the user token has expired');
      if (error instanceof AppError) throw error;
      throw unauthenticated('the user token is invalid');
    }
    return claimsFrom(payload);
  }

  private publicKeyFor(kid: string | undefined): CryptoKey {
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (key === undefined) throw unauthenticated('the user token was not signed by this server');
    return key.publicKey;
  }
}

function claimsFrom(payload: JWTPayload): UserClaims {
  const { sub, exp } = payload;
  const apiKey = payload['apiKey'];
  const user = payload['user'];
  const permissions = payload['permissions'] as { resources?: unknown } | undefined;
  if (typeof sub !== 'string' || typeof exp !== 'number' || typeof apiKey !== 'string') {
    throw unauthenticated('the user token is missing required claims');
  }
  const resources = Array.isArray(permissions?.resources) ? (permissions.resources as TokenResource[]) : [];
  return {
    userId: sub,
    apiKey,
    userProperties: typeof user === 'object' && user !== null ? (user as UserProperties) : {},
    resources,
    expiresAt: exp,
  };
}
