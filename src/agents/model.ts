// Owns the shapes of agents (spec 2.17, 4.20): identity, behaviour versions, groups, and the names of their fields.

export type JsonObject = Record<string, unknown>;

export type ExecutionStrategy = 'ai' | 'service' | 'service+ai' | 'browser-agent' | 'mcp-tools';
export type ContextStrategy =
  | 'web-page-text'
  | 'web-page-screenshot'
  | 'web-page-html'
  | 'web-page-css'
  | 'web-page-links'
  | 'web-page-accessibility'
  | 'computed-styles'
  | 'robots-txt'
  | 'sitemap-data'
  | 'site-audit'
  | 'rest-api'
  | 'none';
/** The five a customer may pick (spec 4.20), plus `readability`, which only the built-in catalog uses. */
export type ServiceId = 'broken-links' | 'crawler' | 'screenshot' | 'accessibility-checker' | 'og-image-checker' | 'readability';
export type ProviderId = 'llm_a' | 'llm_b';

export interface AiConfig {
  readonly provider?: ProviderId;
  readonly model?: string;
}

export interface McpServer {
  readonly name?: string;
  readonly url: string;
  readonly auth?: JsonObject;
  readonly tools?: readonly string[];
}

export interface RestApiOptions {
  readonly url: string;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly auth?: JsonObject;
}

export interface ContextGathering {
  readonly strategies: readonly ContextStrategy[];
  readonly strategyOptions?: { readonly 'web-page-text'?: { readonly deviceType?: 'mobile' | 'desktop' }; readonly 'rest-api'?: RestApiOptions; readonly [k: string]: unknown };
  readonly aiConfig?: AiConfig;
  readonly [extra: string]: unknown;
}

export interface Execution {
  readonly executionStrategy?: ExecutionStrategy;
  readonly serviceId?: ServiceId;
  readonly aiConfig?: AiConfig;
  readonly mcpServers?: readonly McpServer[];
  readonly responseDescriptions?: JsonObject;
  readonly strategyOptions?: JsonObject;
  readonly knowledge?: { readonly useMemory?: boolean; readonly maxChunks?: number };
  readonly [extra: string]: unknown;
}

export interface Stage {
  readonly enabled?: boolean;
}

export type AnnotationStrategy = 'findings' | 'word-level' | 'page-level' | 'none';

export interface PostProcess {
  readonly guardrails?: Stage;
  readonly deletePreviousSuggestions?: Stage;
  readonly annotations?: Stage & { readonly strategy?: AnnotationStrategy };
  readonly analytics?: Stage;
  readonly matchAndMerge?: unknown;
  readonly customProcessors?: readonly string[];
}

/** Behavioural fields of one version (spec 2.17); unknown extra fields are kept as sent. */
export interface Behaviour {
  readonly rawInstructions?: string;
  readonly instructions?: string;
  readonly metadata?: JsonObject;
  readonly contextGathering: ContextGathering;
  readonly execution: Execution;
  readonly response?: JsonObject;
  readonly postProcess?: PostProcess;
  readonly input?: JsonObject;
  readonly scope?: JsonObject;
  readonly setup?: JsonObject;
  readonly [extra: string]: unknown;
}

export const IDENTITY_FIELDS = ['name', 'description', 'enabled'] as const;

/** DB.agents row of a custom agent. */
export interface AgentRecord {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly enabled: boolean;
  /** The version whose behaviour the agent runs. */
  readonly version: number;
  /** Highest version number written (restores write a new one). */
  readonly latestVersion: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** DB.agentVersions row: behaviour with secrets sealed (src/agents/secrets.ts). */
export interface VersionRecord {
  readonly version: number;
  readonly behaviour: Behaviour;
  readonly createdAt: number;
  /** Set when this version was written by a restore. */
  readonly restoredFrom?: number;
}

export interface AgentGroup {
  readonly groupId: string;
  readonly name: string;
  readonly description?: string;
  readonly agentIds: readonly string[];
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Identity fields as answered (spec 2.17). */
export interface AgentIdentity {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly enabled: boolean;
  readonly managedBy: 'plait' | 'customer';
  readonly system: boolean;
  readonly version?: number;
  readonly input?: JsonObject;
}

export const strategyOf = (behaviour: Pick<Behaviour, 'execution'>): ExecutionStrategy => behaviour.execution.executionStrategy ?? 'ai';

/** A postProcess stage runs unless `enabled` is explicitly false (spec 4.20). */
export const stageOn = (stage: Stage | undefined): boolean => stage?.enabled !== false;
