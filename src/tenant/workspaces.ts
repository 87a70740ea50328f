// Owns workspaces, their API keys and auth tokens: creation, listing, rotation, and the credential checks of every request.
import type { Database, Key } from 'lmdb';
import { AppError, alreadyExists, notFound, permissionDenied } from '../errors.js';
import { randomId, randomToken, secretEquals, type Secrets } from '../auth/secrets.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { MAX_ID_BYTES, utf8Bytes } from '../limits.js';
import { defaultApiKeyConfig, type ApiKeyConfig } from './api-key-config.js';

export interface WorkspaceIdentity {
  readonly kind: 'workspace';
  readonly workspaceId: string;
}

export interface ApiKeyIdentity {
  readonly kind: 'apiKey';
  readonly apiKey: string;
  readonly workspaceId: string;
}

export type ApiKeyType = 'testing' | 'production';

interface WorkspaceRecord {
  id: string;
  name: string;
  ownerEmail: string;
  ownerId: string;
  ownerName: string;
  avatar?: string;
  sealedAuthToken: string;
  authTokenHash: string;
  apiKeys: string[];
  createdAt: number;
}

interface AuthTokenRecord {
  name: string;
  domains: string[];
  sealed: string;
  hash: string;
  createdAt: number;
}

export interface ApiKeyRecord {
  apiKey: string;
  workspaceId: string;
  name: string;
  type: ApiKeyType;
  createdAt: number;
  tokens: AuthTokenRecord[];
  config: ApiKeyConfig;
}

export interface WorkspaceView {
  id: string;
  name: string;
  owner: { email: string; id: string; name: string; avatar?: string };
  authToken: string;
  apiKeyList: Record<string, { apiKeyName: string; id: string; type: ApiKeyType }>;
}

export interface AuthTokenView {
  token: string;
  name: string;
  domains: string[];
}

/** What a creation's `within` learns of the new workspace. */
export interface NewWorkspace {
  readonly id: string;
  readonly ownerEmail: string;
  readonly name: string;
}

export interface CreateWorkspaceInput {
  ownerEmail: string;
  name?: string;
  workspaceName?: string;
  avatar?: string;
}

export interface CreateApiKeyInput {
  type: ApiKeyType;
  apiKeyName?: string;
  allowedDomains?: string[];
  createAuthToken?: boolean;
}

const DEFAULT_TOKEN_NAME = 'Default Auth Token';
const IDENTITY_CACHE_LIMIT = 10_000;

export class Workspaces {
  private readonly workspaces: Database<WorkspaceRecord, Key>;
  private readonly byEmail: Database<string, Key>;
  private readonly apiKeys: Database<ApiKeyRecord, Key>;
  private readonly tokenIndex: Database<string, Key>;
  /** apiKey + NUL + token -> identity; cleared whenever a token is rotated. Skips the HMAC on the hot path. */
  private readonly identityCache = new Map<string, ApiKeyIdentity>();

  constructor(private readonly store: Store, private readonly secrets: Secrets) {
    this.workspaces = store.records<WorkspaceRecord>(DB.workspaces);
    this.byEmail = store.records<string>(DB.workspaceByEmail);
    this.apiKeys = store.records<ApiKeyRecord>(DB.apiKeys);
    this.tokenIndex = store.records<string>(DB.authTokenIndex);
  }

  isEmpty(): boolean {
    return this.workspaces.getKeysCount({ limit: 1 }) === 0;
  }

  /**
   * Creates the workspace with its first API key. `within` writes what else the creation causes (the owner's
   * verification email) in the same transaction, so both are committed or neither is.
   */
  async create(input: CreateWorkspaceInput, within?: (tx: WriteTx, workspace: NewWorkspace) => void): Promise<WorkspaceView> {
    const email = input.ownerEmail.trim().toLowerCase();
    const ownerName = input.name ?? input.ownerEmail;
    const workspaceToken = randomId(32);
    const now = Date.now();
    const workspace: WorkspaceRecord = {
      id: `ws_${randomId(20)}`,
      name: input.workspaceName ?? `${ownerName} workspace`,
      ownerEmail: input.ownerEmail.trim(),
      ownerId: `usr_${randomId(20)}`,
      ownerName,
      sealedAuthToken: this.secrets.encrypt(workspaceToken),
      authTokenHash: this.secrets.lookupHash(workspaceToken),
      apiKeys: [],
      createdAt: now,
      ...(input.avatar === undefined ? {} : { avatar: input.avatar }),
    };
    const localPart = email.split('@', 1)[0] ?? 'Dev';
    const keyName = `${localPart.charAt(0).toUpperCase()}${localPart.slice(1)} Test API Key`;
    const record = this.newApiKey(workspace, { type: 'testing', apiKeyName: keyName, createAuthToken: true }, now);
    workspace.apiKeys.push(record.apiKey);
    await this.store.transaction((tx) => {
      if (this.byEmail.get(email) !== undefined) throw alreadyExists('a workspace already exists for this email address');
      this.workspaces.put(workspace.id, workspace);
      this.byEmail.put(email, workspace.id);
      this.writeApiKey(record);
      within?.(tx, { id: workspace.id, ownerEmail: workspace.ownerEmail, name: workspace.name });
    });
    return this.view(workspace);
  }

  /** Every workspace, with its tokens in the clear (the admin CLI; never served over HTTP). */
  list(): WorkspaceView[] {
    return [...this.workspaces.getRange()].map(({ value }) => this.view(value));
  }

  /** The workspace owned by `email` (case-insensitive), if any. */
  idForEmail(email: string): string | undefined {
    return this.byEmail.get(email.trim().toLowerCase());
  }

  /** Every workspace's id, owner email and creation time (read at start by the owner-email checks). */
  *owners(): Iterable<{ id: string; ownerEmail: string; ownerName: string; createdAt: number }> {
    for (const { value } of this.workspaces.getRange()) {
      yield { id: value.id, ownerEmail: value.ownerEmail, ownerName: value.ownerName, createdAt: value.createdAt };
    }
  }

  get(identity: WorkspaceIdentity): WorkspaceView {
    return this.view(this.workspaceRecord(identity.workspaceId));
  }

  async createApiKey(identity: WorkspaceIdentity, input: CreateApiKeyInput): Promise<string> {
    const now = Date.now();
    const workspace = this.workspaceRecord(identity.workspaceId);
    const record = this.newApiKey(workspace, input, now);
    await this.store.transaction(() => {
      const current = this.workspaceRecord(identity.workspaceId);
      this.workspaces.put(current.id, { ...current, apiKeys: [...current.apiKeys, record.apiKey] });
      this.writeApiKey(record);
    });
    return record.apiKey;
  }

  /** API keys of the workspace in creation order, `pageSize` at a time; the page token is the last key listed. */
  listApiKeys(
    identity: WorkspaceIdentity,
    filter: { apiKeys?: string[]; pageSize: number; pageToken?: string },
  ): { rows: Array<{ id: string; apiKeyName: string; type: ApiKeyType }>; nextPageToken?: string } {
    const workspace = this.workspaceRecord(identity.workspaceId);
    const wanted = filter.apiKeys === undefined ? undefined : new Set(filter.apiKeys);
    let keys = workspace.apiKeys.filter((key) => wanted === undefined || wanted.has(key));
    if (filter.pageToken !== undefined) {
      const after = Buffer.from(filter.pageToken, 'base64url').toString();
      const index = keys.indexOf(after);
      if (index === -1) throw new AppError('INVALID_ARGUMENT', 'data.pageToken is not a page token of this listing');
      keys = keys.slice(index + 1);
    }
    const page = keys.slice(0, filter.pageSize);
    const rows = page.map((key) => {
      const record = this.apiKeyRecord(key);
      return { id: record.apiKey, apiKeyName: record.name, type: record.type };
    });
    const last = page.at(-1);
    return keys.length > page.length && last !== undefined
      ? { rows, nextPageToken: Buffer.from(last).toString('base64url') }
      : { rows };
  }

  async renameApiKey(identity: WorkspaceIdentity, apiKey: string, name: string): Promise<void> {
    await this.store.transaction(() => {
      const record = this.ownedApiKey(identity, apiKey);
      this.apiKeys.put(apiKey, { ...record, name });
    });
  }

  authTokens(identity: WorkspaceIdentity, apiKey: string): AuthTokenView[] {
    return this.ownedApiKey(identity, apiKey).tokens.map((token) => this.tokenView(token));
  }

  /** Replaces every auth token of the key with one new token; the old ones stop working at once. */
  async resetAuthToken(identity: WorkspaceIdentity, apiKey: string): Promise<AuthTokenView> {
    const token = randomToken(32);
    const fresh: AuthTokenRecord = {
      name: DEFAULT_TOKEN_NAME,
      domains: [],
      sealed: this.secrets.encrypt(token),
      hash: this.secrets.lookupHash(token),
      createdAt: Date.now(),
    };
    await this.store.transaction(() => {
      const record = this.ownedApiKey(identity, apiKey);
      for (const old of record.tokens) this.tokenIndex.remove(old.hash);
      this.tokenIndex.put(fresh.hash, apiKey);
      this.apiKeys.put(apiKey, { ...record, tokens: [{ ...fresh, name: record.tokens[0]?.name ?? DEFAULT_TOKEN_NAME, domains: record.tokens[0]?.domains ?? [] }] });
    });
    this.identityCache.clear();
    return { token, name: DEFAULT_TOKEN_NAME, domains: [] };
  }

  apiKeyRecord(apiKey: string): ApiKeyRecord {
    const record = this.apiKeys.get(apiKey);
    if (record === undefined) throw notFound('API key not found');
    return record;
  }

  async updateApiKeyConfig(apiKey: string, update: (config: ApiKeyConfig) => ApiKeyConfig): Promise<ApiKeyConfig> {
    let next: ApiKeyConfig | undefined;
    await this.store.transaction(() => {
      const record = this.apiKeyRecord(apiKey);
      next = update(record.config);
      this.apiKeys.put(apiKey, { ...record, config: next });
    });
    if (next === undefined) throw new AppError('INTERNAL', 'API key config update did not run');
    return next;
  }

  /** Workspace-level credential check; constant-time on the token. */
  authenticateWorkspace(workspaceId: string, token: string): WorkspaceIdentity {
    // The header is looked up as an LMDB key: one longer than any id is no workspace, and too long for a key it threw.
    const record = utf8Bytes(workspaceId) > MAX_ID_BYTES ? undefined : this.workspaces.get(workspaceId);
    if (record === undefined || !secretEquals(record.authTokenHash, this.secrets.lookupHash(token))) {
      throw permissionDenied('invalid workspace credentials: the workspace id or workspace auth token is not valid');
    }
    return { kind: 'workspace', workspaceId };
  }

  /** Cluster mode: another node changed keys or tokens (a rotation, a revocation): identities are checked again. */
  forgetCached(): void {
    this.identityCache.clear();
  }

  /** API-key credential check: the token must be a current token of that key (spec section 5). */
  authenticateApiKey(apiKey: string, token: string): ApiKeyIdentity {
    const cacheKey = `${apiKey}\0${token}`;
    const cached = this.identityCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const owner = this.tokenIndex.get(this.secrets.lookupHash(token));
    if (owner === undefined || !secretEquals(owner, apiKey)) {
      throw permissionDenied('the API key is invalid, or the auth token does not belong to it');
    }
    const record = this.apiKeyRecord(apiKey);
    const identity: ApiKeyIdentity = { kind: 'apiKey', apiKey, workspaceId: record.workspaceId };
    if (this.identityCache.size >= IDENTITY_CACHE_LIMIT) this.identityCache.clear();
    this.identityCache.set(cacheKey, identity);
    return identity;
  }

  private newApiKey(
    workspace: WorkspaceRecord,
    input: CreateApiKeyInput,
    now: number,
  ): ApiKeyRecord {
    const apiKey = randomId(20);
    const tokens = input.createAuthToken === false ? [] : [randomToken(32)];
    return {
      apiKey,
      workspaceId: workspace.id,
      name: input.apiKeyName ?? `${input.type === 'production' ? 'Production' : 'Test'} API Key`,
      type: input.type,
      createdAt: now,
      tokens: tokens.map((token) => ({
        name: DEFAULT_TOKEN_NAME,
        domains: input.allowedDomains ?? [],
        sealed: this.secrets.encrypt(token),
        hash: this.secrets.lookupHash(token),
        createdAt: now,
      })),
      config: defaultApiKeyConfig(workspace.ownerEmail, input.type),
    };
  }

  private writeApiKey(record: ApiKeyRecord): void {
    this.apiKeys.put(record.apiKey, record);
    for (const token of record.tokens) this.tokenIndex.put(token.hash, record.apiKey);
  }

  private workspaceRecord(workspaceId: string): WorkspaceRecord {
    const record = this.workspaces.get(workspaceId);
    if (record === undefined) throw notFound('workspace not found');
    return record;
  }

  private ownedApiKey(identity: WorkspaceIdentity, apiKey: string): ApiKeyRecord {
    const record = this.apiKeys.get(apiKey);
    if (record === undefined || record.workspaceId !== identity.workspaceId) throw notFound('API key not found');
    return record;
  }

  private tokenView(token: AuthTokenRecord): AuthTokenView {
    return { token: this.secrets.decrypt(token.sealed), name: token.name, domains: token.domains };
  }

  private view(record: WorkspaceRecord): WorkspaceView {
    const apiKeyList: WorkspaceView['apiKeyList'] = {};
    for (const key of record.apiKeys) {
      const apiKey = this.apiKeys.get(key);
      if (apiKey !== undefined) apiKeyList[key] = { apiKeyName: apiKey.name, id: key, type: apiKey.type };
    }
    return {
      id: record.id,
      name: record.name,
      owner: {
        email: record.ownerEmail,
        id: record.ownerId,
        name: record.ownerName,
        ...(record.avatar === undefined ? {} : { avatar: record.avatar }),
      },
      authToken: this.secrets.decrypt(record.sealedAuthToken),
      apiKeyList,
    };
  }
}
