// Owns the JSON schemas of the workspace, API-key and API-key-config operations (upstream notes 2.1-2.4).
import { arrayOf, emailString, httpUrl, idString, nonEmptyString, object, pageToken } from './common.js';

export const createWorkspaceSchema = object(
  {
    ownerEmail: emailString,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    workspaceName: { type: 'string', minLength: 1, maxLength: 200 },
    avatar: { ...httpUrl, maxLength: 2000 },
  },
  ['ownerEmail'],
);

export const createApiKeySchema = object(
  {
    ownerEmail: emailString,
    type: { enum: ['testing', 'production'] },
    apiKeyName: { type: 'string', minLength: 1, maxLength: 200 },
    createAuthToken: { type: 'boolean' },
    allowedDomains: arrayOf({ type: 'string', minLength: 1, maxLength: 253 }, { max: 100 }),
  },
  ['ownerEmail', 'type'],
);

export const listApiKeysSchema = object({
  apiKeys: arrayOf(idString, { max: 100 }),
  pageSize: { type: 'integer', minimum: 1, maximum: 100 },
  pageToken,
});

export const renameApiKeySchema = object({ apiKey: idString, apiKeyName: { type: 'string', minLength: 1, maxLength: 200 } }, [
  'apiKey',
  'apiKeyName',
]);

export const apiKeyOnlySchema = object({ apiKey: idString }, ['apiKey']);

export const updateApiKeyConfigSchema = {
  type: 'object',
  properties: {
    enablePrivateComments: { type: 'boolean' },
    requireJwtToken: { type: 'boolean' },
    requireAutoOrgUser: { type: 'boolean' },
    defaultDocumentAccessType: { enum: ['public', 'restricted', 'organizationPrivate'] },
    aiModelApiKey: arrayOf(
      object({ provider: { enum: ['openai', 'anthropic', 'gemini'] }, customerApiKey: nonEmptyString }, ['provider', 'customerApiKey'], false),
      { min: 1, max: 3 },
    ),
  },
  additionalProperties: false,
  minProperties: 1,
} as const;

/** Spec 4.13; `continueUrl` is checked against CONSOLE_ORIGIN by the handler (the message names the domain). */
export const sendLoginLinkSchema = object({ email: emailString, continueUrl: { type: 'string', minLength: 1, maxLength: 2048 } }, ['email', 'continueUrl']);

/** Spec 4.16. */
export const emailStatusSchema = object({ ownerEmail: emailString }, ['ownerEmail']);
