// Owns the per-API-key app config (upstream notes 2.4): defaults, merge-only updates, masked provider keys.
import type { Secrets } from '../auth/secrets.js';

export type AccessType = 'public' | 'restricted' | 'organizationPrivate';
export type AiProvider = 'openai' | 'anthropic' | 'gemini';

export interface ApiKeyConfig {
  ownerEmail: string;
  planType: string;
  defaultDocumentAccessType: AccessType;
  isPrivateCommentsEnabled: boolean;
  requireJwtToken: boolean;
  requireAutoOrgUser: boolean;
  /** provider -> { sealed key, masked display text } */
  aiModelKeys: Partial<Record<AiProvider, { sealed: string; displayText: string }>>;
}

export interface ApiKeyConfigUpdate {
  enablePrivateComments?: boolean;
  requireJwtToken?: boolean;
  requireAutoOrgUser?: boolean;
  defaultDocumentAccessType?: AccessType;
  aiModelApiKey?: Array<{ provider: AiProvider; customerApiKey: string }>;
}

export interface ApiKeyConfigView {
  ownerEmail: string;
  planInfo: { type: string };
  defaultDocumentAccessType: AccessType;
  isPrivateCommentsEnabled: boolean;
  requireJwtToken: boolean;
  requireAutoOrgUser: boolean;
  aiModelsConfig?: Partial<Record<AiProvider, { displayText: string }>>;
}

export function defaultApiKeyConfig(ownerEmail: string, type: 'testing' | 'production'): ApiKeyConfig {
  return {
    ownerEmail,
    planType: type === 'production' ? 'self-hosted' : 'sdk test',
    defaultDocumentAccessType: 'public',
    isPrivateCommentsEnabled: false,
    requireJwtToken: false,
    requireAutoOrgUser: true,
    aiModelKeys: {},
  };
}

/** `sk-abc…xyz`: enough to recognise a key, never enough to use it. */
export function maskSecret(secret: string): string {
  if (secret.length <= 8) return '*'.repeat(secret.length);
  return `${secret.slice(0, 3)}...${secret.slice(-3)}`;
}

export function applyApiKeyConfigUpdate(config: ApiKeyConfig, update: ApiKeyConfigUpdate, secrets: Secrets): ApiKeyConfig {
  const aiModelKeys = { ...config.aiModelKeys };
  for (const entry of update.aiModelApiKey ?? []) {
    aiModelKeys[entry.provider] = { sealed: secrets.encrypt(entry.customerApiKey), displayText: maskSecret(entry.customerApiKey) };
  }
  return {
    ...config,
    ...(update.enablePrivateComments === undefined ? {} : { isPrivateCommentsEnabled: update.enablePrivateComments }),
    ...(update.requireJwtToken === undefined ? {} : { requireJwtToken: update.requireJwtToken }),
    ...(update.requireAutoOrgUser === undefined ? {} : { requireAutoOrgUser: update.requireAutoOrgUser }),
    ...(update.defaultDocumentAccessType === undefined ? {} : { defaultDocumentAccessType: update.defaultDocumentAccessType }),
    aiModelKeys,
  };
}

export function viewApiKeyConfig(config: ApiKeyConfig): ApiKeyConfigView {
  const providers = Object.entries(config.aiModelKeys);
  const view: ApiKeyConfigView = {
    ownerEmail: config.ownerEmail,
    planInfo: { type: config.planType },
    defaultDocumentAccessType: config.defaultDocumentAccessType,
    isPrivateCommentsEnabled: config.isPrivateCommentsEnabled,
    requireJwtToken: config.requireJwtToken,
    requireAutoOrgUser: config.requireAutoOrgUser,
  };
  if (providers.length > 0) {
    view.aiModelsConfig = Object.fromEntries(providers.map(([provider, key]) => [provider, { displayText: key?.displayText ?? '' }]));
  }
  return view;
}
