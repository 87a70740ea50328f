// Owns the wiring of the agents room: definitions, groups, the worker pool, runs (and Memory) for server.ts.
import type { Secrets } from '../auth/secrets.js';
import type { Config } from '../config.js';
import type { CollabDocuments } from '../doc/collab-state.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { AgentDefinitions } from './definitions.js';
import { AgentGroups } from './groups.js';
import { AgentPool } from './pool.js';
import { AgentRuns } from './runs.js';
import { Memory } from './memory/memory.js';
import type { ProviderConfig, WorkerEnv } from './tasks.js';
import type { AgentVersionCounter } from './version-counter.js';

export interface AgentServices {
  readonly definitions: AgentDefinitions;
  readonly groups: AgentGroups;
  readonly pool: AgentPool;
  readonly runs: AgentRuns;
  /** Suggestion decisions per agent and approval-drift alerts. */
  readonly memory: Memory;
  /** What every worker task carries: allow-list, providers, fetch limits, Chromium. */
  readonly env: WorkerEnv;
  close(): Promise<void>;
}

export interface AgentDeps {
  readonly store: Store;
  readonly secrets: Secrets;
  readonly config: Config;
  readonly collab: CollabDocuments;
  readonly log: Logger;
  /** The server's clock (tests pass one they advance): run and definition times, run retention. */
  readonly now?: () => number;
  /** Recorded with each run this process executes (WorkerRole.processId). */
  readonly processId?: string;
  /** Cluster mode: agent version numbers from the cluster's counter (src/cluster/agent-versions.ts). */
  readonly versions?: AgentVersionCounter;
}

/** Providers configured by base URL and model (the key is optional: local model servers often need none). */
export function providersOf(config: Config): ProviderConfig[] {
  const providers: ProviderConfig[] = [];
  if (config.llmABaseUrl !== undefined && config.llmAModel !== undefined) providers.push({ id: 'llm_a', baseUrl: config.llmABaseUrl, model: config.llmAModel, apiKey: config.llmAApiKey ?? 'none' });
  if (config.llmBBaseUrl !== undefined && config.llmBModel !== undefined) providers.push({ id: 'llm_b', baseUrl: config.llmBBaseUrl, model: config.llmBModel, apiKey: config.llmBApiKey ?? 'none' });
  return providers;
}

export async function openAgents(deps: AgentDeps): Promise<AgentServices> {
  const { config } = deps;
  const log = deps.log.child({ component: 'agents' });
  const now = deps.now ?? Date.now;
  const definitions = new AgentDefinitions(deps.store, deps.secrets, now, deps.versions);
  const groups = new AgentGroups(deps.store, (apiKey, agentId) => definitions.exists(apiKey, agentId));
  const pool = new AgentPool({ size: config.agentPoolSize, queueLimit: config.agentQueueLimit, taskTimeoutMs: config.agentRunTimeoutMs, ...(config.agentTasksPerKey === undefined ? {} : { perKeyLimit: config.agentTasksPerKey }) });
  const env: WorkerEnv = {
    allowedNetworks: config.outboundAllowedNetworks,
    providers: providersOf(config),
    fetchTimeoutMs: config.agentFetchTimeoutMs,
    fetchMaxBytes: config.agentFetchMaxBytes,
    chromiumPath: config.chromiumPath,
  };
  const runs = new AgentRuns({ store: deps.store, definitions, pool, collab: deps.collab, env, log, now, retentionMs: config.agentRunRetentionMs, ...(deps.processId === undefined ? {} : { processId: deps.processId }) });
  // Before anything counts: runs of a directory from before the status keys get theirs (once).
  await runs.buildStatusIndex();
  const memory = new Memory(deps.store, log);
  deps.collab.onAnnotationsCommitted((ref, changes) => memory.observe(ref, changes));
  // Runs a stop interrupted are marked failed by the holder of the worker role (src/background-work.ts), which knows
  // which processes are still alive; a node starting never touches another node's runs.
  return {
    definitions,
    groups,
    pool,
    runs,
    memory,
    env,
    close: async () => {
      await runs.close();
      await pool.close();
      await memory.settled();
    },
  };
}
