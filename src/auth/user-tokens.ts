// Owns user JWTs: the ES256 signing keys (generated once, private half sealed at rest), minting, JWKS and verification.
import type { JWK } from 'jose';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Database, Key } from 'lmdb';
import { AppError, unauthenticated } from '../errors.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { checkClaims, parseCompactEs256, signedBy, type CompactJwt } from './jwt-check.js';
import { randomId, type Secrets } from './secrets.js';

/**
 * jose signs the tokens; it is imported at the first signature. Keys are made, exported and imported with node:crypto
 * (the same JWKs), so a server that signs nothing does not load it (bench/README.md, "Ninth session", idle memory).
 */
let joseModule: Promise<typeof import('jose')> | undefined;
const jose = (): Promise<typeof import('jose')> => (joseModule ??= import('jose'));

/** The default lifetime of a user token (config USER_TOKEN_LIFETIME_SECONDS). */
export const USER_TOKEN_LIFETIME_SECONDS = 48 * 60 * 60;
/** A signing key older than this is rotated out at start, so a leaked key signs for a bounded time. */
export const DEFAULT_MAX_KEY_AGE_MS = 30 * 24 * 60 * 60 * 1000;
const ALG = 'ES256';
const ISSUER = 'plait';

/** The shape consumers (WebSocket upgrade, REST checks) take, so they depend on a function rather than the class. */
export type VerifyUserToken = (token: string) => Promise<UserClaims>;

export interface UserTokensOptions {
  /** Milliseconds since epoch; injected so tests can mint tokens that are already expired. */
  readonly now?: () => number;
  readonly maxKeyAgeMs?: number;
  /** Seconds a signed token lives; also how long a retired key keeps verifying. Default USER_TOKEN_LIFETIME_SECONDS. */
  readonly lifetimeSeconds?: number;
  /**
   * Cluster mode: catches up with the cluster's state (true once done). A token whose key id is unknown here may be
   * signed by a key another node just created: catch up, reload the keys, and look once more.
   */
  readonly catchUp?: () => Promise<boolean>;
}

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
  privateKey?: KeyObject;
  /** A node:crypto key, which verifies synchronously (src/auth/jwt-check.ts says why). */
  publicKey: KeyObject;
}

/**
 * Tokens whose signature this server has checked, at most this many, least recently used dropped first. A client
 * opening several documents, or reconnecting, sends the same token; the ES256 check (~130 µs) was the largest part of
 * a sync upgrade's admission (bench/README.md, "Ninth session"). Everything else is checked at every use.
 */
export const VERIFIED_TOKENS_MAX = 1024;

export class UserTokens {
  private readonly keys = new Map<string, LoadedKey>();
  /** By the token's text: its parsed form, signature checked (VERIFIED_TOKENS_MAX). */
  private readonly verified = new Map<string, CompactJwt>();
  private current: LoadedKey | undefined;

  private readonly now: () => number;
  private readonly lifetimeSeconds: number;
  private readonly catchUp: (() => Promise<boolean>) | undefined;

  private readonly db: Database<SigningKeyRecord, Key>;

  private constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    options: UserTokensOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.db = store.records<SigningKeyRecord>(DB.signingKeys);
    this.lifetimeSeconds = options.lifetimeSeconds ?? USER_TOKEN_LIFETIME_SECONDS;
    this.catchUp = options.catchUp;
  }

  /** Loads the signing keys, creating the first one on a fresh data directory and rotating one that is too old. */
  static async open(store: Store, secrets: Secrets, options: UserTokensOptions = {}): Promise<UserTokens> {
    const tokens = new UserTokens(store, secrets, options);
    for (const { value } of tokens.db.getRange()) tokens.load(value);
    const maxAge = options.maxKeyAgeMs ?? DEFAULT_MAX_KEY_AGE_MS;
    if (tokens.current === undefined || tokens.current.record.createdAt + maxAge < tokens.now()) await tokens.rotate();
    return tokens;
  }

  /** The key id new tokens are signed with. */
  get currentKid(): string {
    if (this.current === undefined) throw new AppError('INTERNAL', 'no signing key is loaded');
    return this.current.record.kid;
  }

  /**
   * Starts signing with a fresh key. Earlier keys stay in the JWKS and keep verifying the tokens they signed
   * until those have expired (a token lives at most the token lifetime after its key's retirement); then they are dropped.
   */
  async rotate(): Promise<string> {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const now = this.now();
    const kid = `${new Date(now).toISOString().slice(0, 10)}-${randomId(8)}`;
    const record: SigningKeyRecord = {
      kid,
      alg: ALG,
      publicJwk: { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg: ALG, use: 'sig' },
      sealedPrivateJwk: this.secrets.encrypt(JSON.stringify(privateKey.export({ format: 'jwk' }))),
      createdAt: now,
    };
    const previous = this.current;
    // From the database, not memory: keys already lapsed at start were never loaded but are still stored.
    const lapsed = Array.from(this.db.getRange(), ({ value }) => value)
      .filter((stored) => this.isLapsed(stored, now))
      .map((stored) => stored.kid);
    // Store.transaction, not the database's own: a throw part-way must not keep the retirement without the new key.
    await this.store.transaction(() => {
      if (previous !== undefined) this.db.put(previous.record.kid, { ...previous.record, retiredAt: now });
      for (const old of lapsed) this.db.remove(old);
      this.db.put(kid, record);
    });
    for (const old of lapsed) this.keys.delete(old);
    if (previous !== undefined) {
      previous.record = { ...previous.record, retiredAt: now };
      delete previous.privateKey;
    }
    this.current = undefined;
    this.load(record);
    return kid;
  }

  /** Cluster mode: another node created or rotated signing keys; load them all again (each node signs with its newest). */
  async reload(): Promise<void> {
    const records = new Map(Array.from(this.db.getRange(), ({ value }) => [value.kid, value] as const));
    for (const kid of [...this.keys.keys()]) if (!records.has(kid)) this.keys.delete(kid);
    for (const record of records.values()) {
      const loaded = this.keys.get(record.kid);
      if (loaded === undefined) this.load(record);
      else if (record.retiredAt !== undefined && loaded.record.retiredAt === undefined) {
        loaded.record = record;
        delete loaded.privateKey;
      }
    }
    // Swapped in one step, so a token signed meanwhile still finds a key.
    let newest: LoadedKey | undefined;
    for (const key of this.keys.values()) if (key.privateKey !== undefined && (newest === undefined || newest.record.createdAt < key.record.createdAt)) newest = key;
    this.current = newest;
  }

  /** A retired key whose last possible token has expired verifies nothing any more. */
  private isLapsed(record: SigningKeyRecord, now: number): boolean {
    return record.retiredAt !== undefined && record.retiredAt + this.lifetimeSeconds * 1000 < now;
  }

  private load(record: SigningKeyRecord): void {
    if (this.isLapsed(record, this.now())) return;
    const publicKey = createPublicKey({ key: record.publicJwk as JsonWebKey, format: 'jwk' });
    const loaded: LoadedKey = { record, publicKey };
    if (record.retiredAt === undefined) {
      loaded.privateKey = createPrivateKey({ key: JSON.parse(this.secrets.decrypt(record.sealedPrivateJwk)) as JsonWebKey, format: 'jwk' });
      if (this.current === undefined || this.current.record.createdAt < record.createdAt) this.current = loaded;
    }
    this.keys.set(record.kid, loaded);
  }

  async sign(claims: Omit<UserClaims, 'expiresAt'>): Promise<string> {
    const key = this.current;
    if (key?.privateKey === undefined) throw new AppError('INTERNAL', 'no signing key is loaded');
    const issuedAt = Math.floor(this.now() / 1000);
    const { SignJWT } = await jose();
    return new SignJWT({
      userId: claims.userId,
      apiKey: claims.apiKey,
      user: claims.userProperties,
      permissions: { resources: claims.resources },
    })
      .setProtectedHeader({ alg: ALG, kid: key.record.kid, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(claims.userId)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + this.lifetimeSeconds)
      .sign(key.privateKey);
  }

  /** The public keys as a JWKS document, for GET /.well-known/jwks.json: the current key and retired ones still verifying. */
  jwks(): { keys: JWK[] } {
    const now = this.now();
    return { keys: [...this.keys.values()].filter((key) => !this.isLapsed(key.record, now)).map((key) => key.record.publicJwk) };
  }

  /**
   * The one user-token check (WebSocket upgrade and any other consumer): signature by a key of this server,
   * issuer, algorithm and expiry. Throws UNAUTHENTICATED saying which check failed. Synchronous unless a cluster
   * node must first catch up to learn the token's key: the sync upgrade relies on that (src/auth/jwt-check.ts).
   */
  async verify(token: string): Promise<UserClaims> {
    const checked = this.verified.get(token);
    if (checked !== undefined) {
      // Most recently used last: Map order is insertion order.
      this.verified.delete(token);
      this.verified.set(token, checked);
      try {
        return this.claimsOf(checked, true);
      } catch (error) {
        // Expired, or its key lapsed: it will not verify again.
        this.verified.delete(token);
        throw error;
      }
    }
    const jwt = parseCompactEs256(token);
    if (jwt === undefined) throw unauthenticated('the user token is invalid');
    if (this.catchUp !== undefined && jwt.kid !== undefined && !this.keys.has(jwt.kid) && (await this.catchUp())) await this.reload();
    const claims = this.claimsOf(jwt, false);
    this.verified.set(token, jwt);
    if (this.verified.size > VERIFIED_TOKENS_MAX) this.verified.delete(this.verified.keys().next().value as string);
    return claims;
  }

  /** Tokens whose signature is remembered (tests, diagnostics). */
  get verifiedTokens(): number {
    return this.verified.size;
  }

  /** Whether `token`'s signature is remembered (tests). */
  remembers(token: string): boolean {
    return this.verified.has(token);
  }

  /** `verify` bound to this instance, for injection as a VerifyUserToken. */
  readonly verifyUserToken: VerifyUserToken = (token) => this.verify(token);

  /** `signatureChecked`: the signature was verified by a key of this kid before; the key must still be loaded and valid. */
  private claimsOf(jwt: CompactJwt, signatureChecked: boolean): UserClaims {
    const now = this.now();
    const key = jwt.kid === undefined ? undefined : this.keys.get(jwt.kid);
    if (key === undefined || this.isLapsed(key.record, now)) throw unauthenticated('the user token was not signed by this server');
    if (!signatureChecked && !signedBy(jwt, key.publicKey)) throw unauthenticated('the user token is invalid');
    const payload = checkClaims(jwt, ISSUER, now);
    if (payload === 'expired') throw unauthenticated('the user token has expired');
    if (payload === 'invalid') throw unauthenticated('the user token is invalid');
    return claimsFrom(payload);
  }
}

function claimsFrom(payload: Record<string, unknown>): UserClaims {
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
