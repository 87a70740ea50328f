// Owns secrets at rest: the server key, encryption of stored tokens, keyed hashes for lookup, constant-time comparison.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const KEY_FILE = 'server.key';

export class Secrets {
  private readonly encryptionKey: Buffer;
  private readonly hashKey: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length < 32) throw new Error('the server secret key must be at least 32 bytes');
    this.encryptionKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'plait:encrypt:v1', 32));
    this.hashKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'plait:lookup-hash:v1', 32));
  }

  /**
   * Uses `configured` (base64 or hex, from SECRET_KEY) when given, otherwise the key file in the data
   * directory, created with mode 0600 on first start.
   */
  static load(dataDir: string, configured: string | undefined): Secrets {
    if (configured !== undefined) return new Secrets(decodeKey(configured));
    const file = join(dataDir, KEY_FILE);
    if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
    return new Secrets(decodeKey(readFileSync(file, 'utf8').trim()));
  }

  /** AES-256-GCM; output `v1.<iv>.<tag>.<ciphertext>` in base64url. */
  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), body].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined) {
      throw new Error('sealed secret has an unknown format');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** HMAC-SHA256 under the server key: an index key for a secret that reveals nothing without the key. */
  lookupHash(secret: string): string {
    return createHmac('sha256', this.hashKey).update(secret).digest('base64url');
  }
}

/** The key file `Secrets.load` keeps in `dataDir` when SECRET_KEY is not set; undefined when there is none (yet). */
export function keyFileOf(dataDir: string): string | undefined {
  const file = join(dataDir, KEY_FILE);
  return existsSync(file) ? file : undefined;
}

function decodeKey(text: string): Buffer {
  const key = /^[0-9a-f]+$/i.test(text) && text.length % 2 === 0 ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length < 32) throw new Error('SECRET_KEY must decode (hex or base64) to at least 32 bytes');
  return key;
}

/** Constant-time string equality (length leaks, content does not). */
export function secretEquals(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random id from [A-Za-z0-9], unbiased. */
export function randomId(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHANUMERIC[byte % 62];
    }
  }
  return out;
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
