// Owns the LMDB key layout: every named database and the shape of its keys, in one place (docs/storage.md mirrors it).

/**
 * Named databases. Keys are lmdb-js ordered-binary arrays, so a key prefix is a range scan.
 * Values are msgpackr records unless marked binary.
 */
export const DB = {
  /** 'schemaVersion' -> number; 'devBootstrapDone' -> true. */
  meta: 'meta',
  /** [workspaceId] -> WorkspaceRecord */
  workspaces: 'workspaces',
  /** [ownerEmailLowercase] -> workspaceId */
  workspaceByEmail: 'workspace-by-email',
  /** [apiKey] -> ApiKeyRecord (auth tokens kept encrypted, indexed by keyed hash below) */
  apiKeys: 'api-keys',
  /** [keyedHash(authToken)] -> apiKey */
  authTokenIndex: 'auth-token-index',
  /** [kid] -> SigningKeyRecord (user-token signing keys; private part encrypted) */
  signingKeys: 'signing-keys',
  /** [apiKey, kind, ...ids] -> directory records (organizations, folders, documents, users, groups, grants) */
  directory: 'directory',
  /** binary. [apiKey, organizationId, documentId, editorId, seq] -> one Yjs update */
  docUpdates: 'doc-updates',
  /** binary. [apiKey, organizationId, documentId, editorId] -> Yjs state snapshot (encodeStateAsUpdate) */
  docSnapshots: 'doc-snapshots',
  /** [apiKey, organizationId, documentId, editorId] -> StoreMeta (type, contentKey, lastUpdate, lastUpdatedBy, sessionId, nextSeq) */
  docStores: 'doc-stores',
  /** [apiKey, organizationId, documentId, annotationId] -> AnnotationRecord */
  annotations: 'annotations',
  /** [apiKey, organizationId, documentId, userId] -> PresenceRecord */
  presence: 'presence',
  /** seq (a bare number: lmdb-js reads a one-element array key back as its element) -> OutboxEvent, written in the same transaction as its change */
  outbox: 'outbox',
  /** [apiKey, agentId] -> AgentRecord (custom agents; src/agents/definitions.ts) */
  agents: 'agents',
  /** [apiKey, agentId, version] -> VersionRecord (behaviour with secrets sealed) */
  agentVersions: 'agent-versions',
  /** [apiKey, groupId] -> AgentGroup */
  agentGroups: 'agent-groups',
  /** [apiKey, agentId] -> AgentStats (execution count, last run, tokens) */
  agentStats: 'agent-stats',
  /** [apiKey, executionId] -> ExecutionRecord; [apiKey, '~time', startedAt, executionId] -> null (newest-first index) */
  agentExecutions: 'agent-executions',
  /** [apiKey, agentId, decidedAt, annotationId] -> Decision (Memory: suggestion accept/reject per agent) */
  memoryDecisions: 'memory-decisions',
  /** [apiKey, alertId] -> Alert; [apiKey, '~dedup', dedupKey] -> alertId */
  memoryAlerts: 'memory-alerts',
  /** [apiKey] -> AlertConfig */
  memoryConfig: 'memory-config',
} as const;

export type DbName = (typeof DB)[keyof typeof DB];

/** Bumped when a stored shape changes incompatibly; checked at start. */
export const SCHEMA_VERSION = 1;
