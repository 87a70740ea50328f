// Owns the permission provider (upstream 2.8, 2.12): its config, signing its answers, and asking it what stored grants do not decide.
import type { Database, Key } from 'lmdb';
import type { AccessRole } from '../auth/user-tokens.js';
import { secretEquals, type Secrets } from '../auth/secrets.js';
import { invalidArgument } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { DocumentAccess } from './access.js';
import type { DocumentKey } from '../document-key.js';
import { maskSecret } from './api-key-config.js';
import { AnswerCache } from './answer-cache.js';

/** One answer of the provider (upstream 2.12's Generate Signature input). `expiresAt` in ms. */
export interface ProviderPermission {
  readonly userId: string;
  readonly resourceId: string;
  readonly type: 'organization' | 'folder' | 'document';
  readonly hasAccess: boolean;
  readonly accessRole?: AccessRole;
  readonly expiresAt?: number;
}

interface StoredConfig {
  readonly usePermissionProvider: boolean;
  readonly permissionProviderUrl: string;
  readonly sealedAuthToken?: string;
  readonly authTokenDisplay?: string;
}

export interface PermissionProviderConfigView {
  usePermissionProvider: boolean;
  permissionProviderConfig: { permissionProviderUrl: string; authToken: string };
}

export interface PermissionProviderUpdate {
  usePermissionProvider?: boolean;
  permissionProviderConfig?: { permissionProviderUrl?: string; authToken?: string };
}

/** The outbound client's shape (src/delivery/outbound/http.ts), so tests and the core need not import the adapter. */
export interface ProviderHttp {
  request(req: { url: string; method: string; headers: Record<string, string>; body: string; timeoutMs: number; maxBytes: number; maxRedirects: number }): Promise<{ status: number; body: Buffer }>;
}

export interface PermissionProviderDeps {
  readonly store: Store;
  readonly secrets: Secrets;
  readonly http: ProviderHttp;
  readonly log: Pick<Logger, 'warn'>;
  readonly now?: () => number;
  /** How long the provider may take; a slower answer denies. */
  readonly timeoutMs?: number;
}

/** Answers cached at most this long, whatever their expiresAt says, so a revoked grant is asked again within a day. */
const MAX_CACHE_MS = 24 * 60 * 60 * 1000;
/** Answers cached in all, over every API key. */
export const CACHE_ENTRIES = 10_000;
/**
 * Answers one API key may hold: a quarter of the cache, so one workspace asking about many (user, document) pairs
 * replaces its own answers, not every other workspace's (docs/limits.md, "Shared work, per workspace").
 */
export const CACHE_ENTRIES_PER_KEY = 2_500;
const DENIED: DocumentAccess = Object.freeze({ role: null });

/** JSON with object keys sorted, so a signature does not depend on key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export class PermissionProvider {
  private readonly db: Database<StoredConfig, Key>;
  /** [apiKey, userId, organizationId, documentId] -> answer and until when it holds; least recently used out first, a share per key. */
  private readonly cache = new AnswerCache<DocumentAccess>(CACHE_ENTRIES, CACHE_ENTRIES_PER_KEY);
  /**
   * Questions on their way to the provider, by cache key: callers asking the same question meanwhile (a client's
   * reconnect storm, many tabs) share one request instead of sending one each to a provider that may be slow.
   */
  private readonly asking = new Map<string, Promise<{ access: DocumentAccess; until?: number }>>();
  private readonly now: () => number;

  constructor(private readonly deps: PermissionProviderDeps) {
    this.db = deps.store.records<StoredConfig>(DB.permissionProvider);
    this.now = deps.now ?? Date.now;
  }

  config(apiKey: string): PermissionProviderConfigView {
    const stored = this.db.get([apiKey]);
    return {
      usePermissionProvider: stored?.usePermissionProvider ?? false,
      // The token is the customer's secret for their own endpoint: shown masked, like AI provider keys.
      permissionProviderConfig: { permissionProviderUrl: stored?.permissionProviderUrl ?? '', authToken: stored?.authTokenDisplay ?? '' },
    };
  }

  async update(apiKey: string, update: PermissionProviderUpdate): Promise<void> {
    const url = update.permissionProviderConfig?.permissionProviderUrl;
    if (url !== undefined && url !== '' && !(URL.canParse(url) && /^https?:$/.test(new URL(url).protocol))) {
      throw invalidArgument('data.permissionProviderConfig.permissionProviderUrl: Please enter a valid URL');
    }
    await this.deps.store.transaction(() => {
      const stored = this.db.get([apiKey]);
      const token = update.permissionProviderConfig?.authToken;
      const next: StoredConfig = {
        usePermissionProvider: update.usePermissionProvider ?? stored?.usePermissionProvider ?? false,
        permissionProviderUrl: url ?? stored?.permissionProviderUrl ?? '',
        ...(token === undefined
          ? { ...(stored?.sealedAuthToken === undefined ? {} : { sealedAuthToken: stored.sealedAuthToken, authTokenDisplay: stored.authTokenDisplay ?? '' }) }
          : token === ''
            ? {}
            : { sealedAuthToken: this.deps.secrets.encrypt(token), authTokenDisplay: maskSecret(token) }),
      };
      if (next.usePermissionProvider && next.permissionProviderUrl === '') {
        throw invalidArgument('data.permissionProviderConfig.permissionProviderUrl is required to enable the permission provider');
      }
      this.db.putSync([apiKey], next);
    });
    this.forget(apiKey);
  }

  /** Generate Signature: an HMAC under the server's key, bound to the API key, over the canonical permissions. */
  sign(apiKey: string, permissions: readonly ProviderPermission[]): string {
    return this.deps.secrets.lookupHash(`permission-provider\u0000${apiKey}\u0000${canonicalJson(permissions)}`);
  }

  verify(apiKey: string, permissions: readonly ProviderPermission[], signature: string): boolean {
    return secretEquals(this.sign(apiKey, permissions), signature);
  }

  enabled(apiKey: string): boolean {
    const stored = this.db.get([apiKey]);
    return stored?.usePermissionProvider === true && stored.permissionProviderUrl !== '';
  }

  /**
   * Asks the provider about one user on one document. Only a signed answer that names this user and document
   * counts; a timeout, an error status, a malformed or unsigned answer denies (never grants). Answers are cached
   * until their expiresAt (at most a day); an answer without one is not cached.
   */
  async documentAccess(userId: string, document: DocumentKey): Promise<DocumentAccess> {
    const stored = this.db.get([document.apiKey]);
    if (stored === undefined || !stored.usePermissionProvider || stored.permissionProviderUrl === '') return DENIED;
    const cacheKey = JSON.stringify([document.apiKey, userId, document.organizationId, document.documentId]);
    const now = this.now();
    const cached = this.cache.get(cacheKey, now);
    if (cached !== undefined) return cached.value;
    let asked = this.asking.get(cacheKey);
    if (asked === undefined) {
      asked = this.ask(stored, userId, document).finally(() => this.asking.delete(cacheKey));
      this.asking.set(cacheKey, asked);
    }
    const answer = await asked;
    if (answer.until !== undefined) this.cache.set(document.apiKey, cacheKey, answer.access, Math.min(answer.until, now + MAX_CACHE_MS));
    return answer.access;
  }

  private async ask(stored: StoredConfig, userId: string, document: DocumentKey): Promise<{ access: DocumentAccess; until?: number }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (stored.sealedAuthToken !== undefined) headers['authorization'] = `Bearer ${this.deps.secrets.decrypt(stored.sealedAuthToken)}`;
    const body = JSON.stringify({ userId, organizationId: document.organizationId, resources: [{ type: 'document', resourceId: document.documentId, organizationId: document.organizationId }] });
    const refuse = (reason: string): { access: DocumentAccess } => {
      this.deps.log.warn('permission provider answer refused; access denied', { reason, organizationId: document.organizationId, documentId: document.documentId });
      return { access: DENIED };
    };
    let response: { status: number; body: Buffer };
    try {
      response = await this.deps.http.request({ url: stored.permissionProviderUrl, method: 'POST', headers, body, timeoutMs: this.deps.timeoutMs ?? 3000, maxBytes: 64 * 1024, maxRedirects: 0 });
    } catch (error) {
      return refuse(error instanceof Error ? error.message : String(error));
    }
    if (response.status < 200 || response.status > 299) return refuse(`HTTP ${response.status}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(response.body.toString('utf8'));
    } catch (error) {
      return refuse(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    const { permissions, signature } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { permissions?: unknown; signature?: unknown };
    if (!Array.isArray(permissions) || typeof signature !== 'string') return refuse('no permissions array and signature');
    if (!this.verify(document.apiKey, permissions as ProviderPermission[], signature)) return refuse('bad signature');
    const mine = (permissions as ProviderPermission[]).find((p) => p.userId === userId && p.type === 'document' && p.resourceId === document.documentId);
    if (mine === undefined) return refuse('no answer for this user and document');
    const until = typeof mine.expiresAt === 'number' ? mine.expiresAt : undefined;
    if (until !== undefined && until <= this.now()) return refuse('the answer has expired');
    if (mine.hasAccess !== true) return until === undefined ? { access: DENIED } : { access: DENIED, until };
    const role: AccessRole = mine.accessRole === 'viewer' ? 'viewer' : 'editor';
    const access: DocumentAccess = until === undefined ? { role } : { role, expiresAt: until };
    return until === undefined ? { access } : { access, until };
  }

  /** Cluster mode: another node changed a provider config; every cached answer is asked again. */
  forgetAll(): void {
    this.cache.clear();
  }

  private forget(apiKey: string): void {
    this.cache.forget(apiKey);
  }

  /** Answers cached for `apiKey` (tests). */
  cachedAnswers(apiKey: string): number {
    return this.cache.sizeOf(apiKey);
  }
}
