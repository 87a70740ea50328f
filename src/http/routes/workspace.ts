// Owns the workspace administration operations: create/get workspace, API keys, auth tokens, API-key config.
import type { Secrets } from '../../auth/secrets.js';
import { invalidArgument } from '../../errors.js';
import { applyApiKeyConfigUpdate, viewApiKeyConfig, type ApiKeyConfigUpdate } from '../../tenant/api-key-config.js';
import { normalizeDomain, type Domains } from '../../tenant/domains.js';
import { refuseDisposable } from '../../tenant/email-rules.js';
import type { WriteTx } from '../../store/env.js';
import type { ApiKeyType, CreateWorkspaceInput, NewWorkspace, WorkspaceView, Workspaces } from '../../tenant/workspaces.js';
import { ok, operation, type Operation } from '../operation.js';
import { emptyData } from '../schemas/common.js';
import {
  apiKeyOnlySchema,
  createApiKeySchema,
  createWorkspaceSchema,
  listApiKeysSchema,
  renameApiKeySchema,
  updateApiKeyConfigSchema,
} from '../schemas/workspace.js';

/** What a new workspace causes besides itself: written in its transaction (`within`), then told once committed. */
export interface WorkspaceCreation {
  within?(tx: WriteTx, workspace: NewWorkspace): void;
  committed?(workspace: WorkspaceView): void;
}

/** `creation` starts the owner-email verification of a new workspace (its email is recorded with it, sent after the reply). */
export function workspaceOperations(
  workspaces: Workspaces,
  secrets: Secrets,
  domains: Domains,
  creation: WorkspaceCreation = {},
): Operation[] {
  return [
    operation<CreateWorkspaceInput, 'public'>({
      paths: ['/v2/workspace/create'],
      auth: 'public',
      schema: createWorkspaceSchema,
      targetEmail: { limiter: 'emailSend', of: (input) => input.ownerEmail },
      handle: async (input) => {
        refuseDisposable(input.ownerEmail, 'data.ownerEmail');
        const workspace = await workspaces.create(input, creation.within?.bind(creation));
        creation.committed?.(workspace);
        return ok('Workspace created successfully', workspace);
      },
    }),
    operation<Record<string, never>, 'workspace'>({
      paths: ['/v2/workspace/get'],
      auth: 'workspace',
      schema: emptyData,
      handle: (_input, ctx) => ok('Workspace retrieved successfully', workspaces.get(ctx.identity)),
    }),
    operation<{ ownerEmail: string; type: ApiKeyType; apiKeyName?: string; createAuthToken?: boolean; allowedDomains?: string[] }, 'workspace'>({
      paths: ['/v2/workspace/apikey/create'],
      auth: 'workspace',
      schema: createApiKeySchema,
      handle: async (input, ctx) => {
        const owner = workspaces.get(ctx.identity).owner.email;
        if (owner.toLowerCase() !== input.ownerEmail.trim().toLowerCase()) {
          throw invalidArgument('data.ownerEmail must be the email of the workspace owner');
        }
        // Checked before the key exists, so a bad domain creates nothing.
        const allowed = (input.allowedDomains ?? []).map((domain, i) => normalizeDomain(domain, `data.allowedDomains[${i}]`));
        const apiKey = await workspaces.createApiKey(ctx.identity, {
          type: input.type,
          ...(input.apiKeyName === undefined ? {} : { apiKeyName: input.apiKeyName }),
          ...(input.createAuthToken === undefined ? {} : { createAuthToken: input.createAuthToken }),
          ...(input.allowedDomains === undefined ? {} : { allowedDomains: input.allowedDomains }),
        });
        if (allowed.length > 0) await domains.add(apiKey, allowed);
        return ok('API key created successfully.', { apiKey });
      },
    }),
    operation<{ apiKeys?: string[]; pageSize?: number; pageToken?: string }, 'workspace'>({
      paths: ['/v2/workspace/apikeys/get'],
      auth: 'workspace',
      schema: listApiKeysSchema,
      handle: (input, ctx) => {
        const page = workspaces.listApiKeys(ctx.identity, {
          pageSize: input.pageSize ?? 100,
          ...(input.apiKeys === undefined ? {} : { apiKeys: input.apiKeys }),
          ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
        });
        return ok('API keys retrieved successfully.', page.rows, page.nextPageToken === undefined ? undefined : { nextPageToken: page.nextPageToken });
      },
    }),
    operation<{ apiKey: string; apiKeyName: string }, 'workspace'>({
      paths: ['/v2/workspace/apikey/update'],
      auth: 'workspace',
      schema: renameApiKeySchema,
      handle: async (input, ctx) => {
        await workspaces.renameApiKey(ctx.identity, input.apiKey, input.apiKeyName);
        return ok('API key updated successfully.', null);
      },
    }),
    operation<{ apiKey: string }, 'workspace'>({
      paths: ['/v2/workspace/authtokens/get'],
      auth: 'workspace',
      schema: apiKeyOnlySchema,
      handle: (input, ctx) =>
        ok('Auth tokens retrieved successfully.', { apiKey: input.apiKey, authTokens: workspaces.authTokens(ctx.identity, input.apiKey) }),
    }),
    operation<{ apiKey: string }, 'workspace'>({
      paths: ['/v2/workspace/authtoken/reset'],
      auth: 'workspace',
      schema: apiKeyOnlySchema,
      handle: async (input, ctx) =>
        ok('Auth token reset successfully.', { apiKey: input.apiKey, newAuthToken: await workspaces.resetAuthToken(ctx.identity, input.apiKey) }),
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/apikeyconfig/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('API key config retrieved successfully.', viewApiKeyConfig(workspaces.apiKeyRecord(ctx.identity.apiKey).config)),
    }),
    operation<ApiKeyConfigUpdate, 'apiKey'>({
      paths: ['/v2/workspace/apikeyconfig/update'],
      auth: 'apiKey',
      schema: updateApiKeyConfigSchema,
      handle: async (input, ctx) => {
        const config = await workspaces.updateApiKeyConfig(ctx.identity.apiKey, (current) => applyApiKeyConfigUpdate(current, input, secrets));
        return ok('API key config updated successfully.', viewApiKeyConfig(config));
      },
    }),
  ];
}
