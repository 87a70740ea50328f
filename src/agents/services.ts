// Owns the wiring of the agents room: definitions, groups (and, as they land, the run scheduler and Memory) for server.ts.
import type { Secrets } from '../auth/secrets.js';
import type { Store } from '../store/env.js';
import { AgentDefinitions } from './definitions.js';
import { AgentGroups } from './groups.js';

export interface AgentServices {
  readonly definitions: AgentDefinitions;
  readonly groups: AgentGroups;
  close(): Promise<void>;
}

export interface AgentDeps {
  readonly store: Store;
  readonly secrets: Secrets;
}

export function openAgents(deps: AgentDeps): AgentServices {
  const definitions = new AgentDefinitions(deps.store, deps.secrets);
  const groups = new AgentGroups(deps.store, (apiKey, agentId) => definitions.exists(apiKey, agentId));
  return {
    definitions,
    groups,
    close: async () => {},
  };
}
