// Owns the JSON schemas of the agent operations (spec 2.17, 4.14, 4.20; upstream notes 1.10); cross-field rules live in src/agents/validation.ts.
import { arrayOf, idString, nonEmptyString, object } from './common.js';

import { CONTEXT_STRATEGIES, EXECUTION_STRATEGIES, PROVIDERS, RESPONSE_ADAPTERS, SERVICE_IDS } from '../../agents/catalog-enums.js';

export { CONTEXT_STRATEGIES, EXECUTION_STRATEGIES, PROVIDERS, RESPONSE_ADAPTERS, SERVICE_IDS };

const anyObject = { type: 'object' } as const;
const stage = object({ enabled: { type: 'boolean' } });
const aiConfig = object({ provider: { enum: [...PROVIDERS] }, model: { type: 'string', minLength: 1, maxLength: 200 } });

/** One MCP server (Plait's shape; the spec leaves it open): a streamable-HTTP endpoint and optional credentials. */
const mcpServer = object(
  {
    name: { type: 'string', maxLength: 200 },
    url: { type: 'string', pattern: '^https?://', maxLength: 2048 },
    auth: anyObject,
    tools: arrayOf({ type: 'string', minLength: 1 }, { max: 100 }),
  },
  ['url'],
);

const contextGathering = object(
  {
    strategies: arrayOf({ enum: [...CONTEXT_STRATEGIES] }, { min: 1, max: CONTEXT_STRATEGIES.length }),
    strategyOptions: object({
      'web-page-text': object({ deviceType: { enum: ['mobile', 'desktop'] } }),
      'rest-api': object(
        {
          url: { type: 'string', pattern: '^https?://', maxLength: 2048 },
          method: { enum: ['GET', 'POST'] },
          headers: { type: 'object', additionalProperties: { type: 'string', maxLength: 8192 } },
          body: { type: 'string', maxLength: 65536 },
          auth: anyObject,
        },
        ['url'],
      ),
    }),
    aiConfig,
  },
  ['strategies'],
);

const execution = object({
  executionStrategy: { enum: [...EXECUTION_STRATEGIES] },
  serviceId: { enum: [...SERVICE_IDS] },
  aiConfig,
  mcpServers: arrayOf(mcpServer, { max: 20 }),
  responseDescriptions: anyObject,
  strategyOptions: anyObject,
  knowledge: object({ useMemory: { type: 'boolean' }, maxChunks: { type: 'number', minimum: 0 } }),
});

const response = object({
  useAiFormatting: { type: 'boolean' },
  formattingPrompt: { type: 'string', maxLength: 20000 },
  responseAdapter: { enum: [...RESPONSE_ADAPTERS] },
});

const postProcess = object(
  {
    guardrails: stage,
    deletePreviousSuggestions: stage,
    annotations: object({ enabled: { type: 'boolean' }, strategy: { enum: ['findings', 'word-level', 'page-level', 'none'] } }),
    analytics: stage,
    matchAndMerge: {},
    customProcessors: arrayOf({ type: 'string' }),
  },
  [],
  false,
);

export const userContextField = object(
  {
    id: nonEmptyString,
    title: nonEmptyString,
    type: { enum: ['string', 'number', 'boolean'] },
    required: { type: 'boolean' },
    example: { type: 'string' },
    defaultValue: { type: ['string', 'number', 'boolean'] },
  },
  ['id', 'title', 'type'],
);

const input = object({
  variableKeys: arrayOf({ type: 'string' }),
  userContextFields: arrayOf(userContextField, { max: 100 }),
  inputRequirements: object({ requires: arrayOf({ type: 'string' }), requiresOneOf: arrayOf({ type: 'string' }) }),
  supportedVariables: arrayOf({ type: 'string' }),
});

const scope = object({
  pageScope: arrayOf({ type: 'string' }),
  pageScopeExclude: arrayOf({ type: 'string' }),
  contentTypes: arrayOf({ type: 'string' }),
  crossPage: object({ enabled: { type: 'boolean' }, targetProperty: {}, pageDiscovery: {}, pages: arrayOf(anyObject), sourceOfTruthKnowledgeSourceId: {} }),
});

/** Behavioural fields (spec 2.17); other keys are accepted and kept (spec 4.20: "accepted and forwarded"). */
export const behaviourProperties = {
  rawInstructions: { type: 'string', maxLength: 100_000 },
  instructions: { type: 'string', maxLength: 100_000 },
  metadata: anyObject,
  contextGathering,
  execution,
  response,
  postProcess,
  input,
  scope,
  setup: anyObject,
};

const identityProperties = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  description: { type: 'string', minLength: 1, maxLength: 2000 },
  enabled: { type: 'boolean' },
};

export const createAgentSchema = object(
  { ...identityProperties, ...behaviourProperties },
  ['name', 'description', 'enabled', 'contextGathering', 'execution'],
);

export const getAgentsSchema = object(
  { agentId: idString, filter: { enum: ['defaultOnly', 'customOnly'] }, groupId: idString },
  [],
  false,
);

export const updateAgentSchema = object({ agentId: idString, ...identityProperties }, ['agentId'], false);

export const updateVersionSchema = object({ agentId: idString, ...behaviourProperties }, ['agentId']);

export const agentIdSchema = object({ agentId: idString }, ['agentId'], false);

export const restoreVersionSchema = object({ agentId: idString, version: { type: 'integer', minimum: 1 } }, ['agentId'], false);

const agentIds = arrayOf(idString, { min: 1, max: 200 });

export const createGroupSchema = object(
  { name: identityProperties.name, description: { type: 'string', maxLength: 2000 }, agentIds: arrayOf(idString, { max: 200 }) },
  ['name'],
  false,
);
export const groupIdSchema = object({ groupId: idString }, ['groupId'], false);
export const updateGroupSchema = object(
  { groupId: idString, name: identityProperties.name, description: { type: 'string', maxLength: 2000 }, agentIds: arrayOf(idString, { max: 200 }) },
  ['groupId'],
  false,
);
export const groupMembersSchema = object({ groupId: idString, agentIds }, ['groupId', 'agentIds'], false);
export const listGroupsSchema = object({}, [], false);

const documentScope = { organizationId: idString, documentId: idString };

export const runAgentSchema = object(
  { agentId: idString, url: { type: 'string', pattern: '^https?://', maxLength: 2048 }, ...documentScope, userContext: { type: 'object' } },
  ['agentId', 'url', 'organizationId', 'documentId'],
  false,
);
export const getExecutionSchema = object({ executionId: idString, includeResults: { type: 'boolean' } }, ['executionId'], false);
export const cancelExecutionSchema = object({ executionId: idString }, ['executionId'], false);
export const listExecutionsSchema = object(
  { pageSize: { type: 'integer', minimum: 1, maximum: 1000 }, pageToken: { type: 'string', minLength: 1, maxLength: 512 }, agentId: idString, status: { enum: ['running', 'completed', 'failed', 'cancelled'] } },
  [],
  false,
);
export const countExecutionsSchema = object({ agentId: idString }, [], false);

export const validatePromptSchema = object(
  { prompt: { type: 'string', minLength: 1, maxLength: 20_000 }, provider: { enum: [...PROVIDERS] }, userContextFields: arrayOf(userContextField, { max: 100 }) },
  ['prompt'],
  false,
);
export const askAiSchema = object(
  { prompt: { type: 'string', minLength: 1, maxLength: 20_000 }, text: { type: 'string', minLength: 1, maxLength: 200_000 }, model: { type: 'string', minLength: 1, maxLength: 200 }, provider: { enum: [...PROVIDERS] } },
  ['prompt', 'text'],
  false,
);

export const resolveConfigSchema = object({ instructions: { type: 'string', minLength: 1, maxLength: 20_000 }, provider: { enum: [...PROVIDERS] } }, ['instructions'], false);
export const enhancePromptSchema = object({ prompt: { type: 'string', minLength: 1, maxLength: 20_000 }, provider: { enum: [...PROVIDERS] } }, ['prompt'], false);
export const refinePromptSchema = object(
  {
    prompt: { type: 'string', minLength: 1, maxLength: 20_000 },
    feedback: arrayOf(object({ findingTitle: { type: 'string' }, targetText: { type: 'string' }, verdict: { enum: ['correct', 'incorrect', 'missed'] }, comment: { type: 'string', maxLength: 2000 } }, ['verdict'], false), { min: 1, max: 200 }),
    provider: { enum: [...PROVIDERS] },
  },
  ['prompt', 'feedback'],
  false,
);
export const extractSchema = object(
  { content: { type: 'string', minLength: 1, maxLength: 500_000 }, fileName: { type: 'string', maxLength: 500 }, mimeType: { type: 'string', maxLength: 200 }, provider: { enum: [...PROVIDERS] } },
  ['content'],
  false,
);
export const analyticsSchema = object({ agentId: idString }, [], false);
