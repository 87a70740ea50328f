// Owns agent groups: named, ordered lists of agent ids (upstream notes 1.10 `/v2/agents/groups/*`).
import type { Database, Key } from 'lmdb';
import { randomId } from '../auth/secrets.js';
import { invalidArgument, notFound } from '../errors.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { AgentGroup } from './model.js';

export interface GroupInput {
  readonly name?: string;
  readonly description?: string;
  readonly agentIds?: readonly string[];
}

/** Keeps the first of each id, in order. */
const unique = (ids: readonly string[]): string[] => [...new Set(ids)];

export class AgentGroups {
  private readonly groups: Database<AgentGroup, Key>;

  /** `known` tells whether an agent id exists for the API key (built-in or custom). */
  constructor(private readonly store: Store, private readonly known: (apiKey: string, agentId: string) => boolean, private readonly now: () => number = Date.now) {
    this.groups = store.records<AgentGroup>(DB.agentGroups);
  }

  private checkAgents(apiKey: string, agentIds: readonly string[]): void {
    const missing = agentIds.filter((id) => !this.known(apiKey, id));
    if (missing.length > 0) throw notFound(`agent(s) not found: ${missing.join(', ')}`);
  }

  get(apiKey: string, groupId: string): AgentGroup {
    const group = this.groups.get([apiKey, groupId]);
    if (group === undefined) throw notFound(`agent group ${groupId} not found`);
    return group;
  }

  list(apiKey: string): AgentGroup[] {
    const rows = Array.from(this.groups.getRange({ start: [apiKey], end: [apiKey, '\uffff'] }), ({ value }) => value);
    return rows.sort((a, b) => a.createdAt - b.createdAt || a.groupId.localeCompare(b.groupId));
  }

  async create(apiKey: string, input: Required<Pick<GroupInput, 'name'>> & GroupInput): Promise<AgentGroup> {
    const agentIds = unique(input.agentIds ?? []);
    this.checkAgents(apiKey, agentIds);
    const now = this.now();
    const group: AgentGroup = {
      groupId: randomId(20),
      name: input.name,
      ...(input.description === undefined ? {} : { description: input.description }),
      agentIds,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.transaction(() => this.groups.putSync([apiKey, group.groupId], group));
    return group;
  }

  async update(apiKey: string, groupId: string, input: GroupInput): Promise<AgentGroup> {
    if (input.name === undefined && input.description === undefined && input.agentIds === undefined) {
      throw invalidArgument('data needs at least one of name, description, agentIds besides groupId');
    }
    if (input.agentIds !== undefined) this.checkAgents(apiKey, input.agentIds);
    return this.change(apiKey, groupId, (group) => ({
      ...group,
      ...(input.name === undefined ? {} : { name: input.name }),
      ...(input.description === undefined ? {} : { description: input.description }),
      ...(input.agentIds === undefined ? {} : { agentIds: unique(input.agentIds) }),
    }));
  }

  /** Appends agents not already members, in the order sent. */
  addAgents(apiKey: string, groupId: string, agentIds: readonly string[]): Promise<AgentGroup> {
    this.checkAgents(apiKey, agentIds);
    return this.change(apiKey, groupId, (group) => ({ ...group, agentIds: unique([...group.agentIds, ...agentIds]) }));
  }

  removeAgents(apiKey: string, groupId: string, agentIds: readonly string[]): Promise<AgentGroup> {
    const drop = new Set(agentIds);
    return this.change(apiKey, groupId, (group) => ({ ...group, agentIds: group.agentIds.filter((id) => !drop.has(id)) }));
  }

  async delete(apiKey: string, groupId: string): Promise<void> {
    await this.store.transaction(() => {
      this.get(apiKey, groupId);
      this.groups.removeSync([apiKey, groupId]);
    });
  }

  /** A deleted agent leaves every group it was in. */
  async forgetAgent(apiKey: string, agentId: string): Promise<void> {
    await this.store.transaction(() => {
      for (const group of this.list(apiKey)) {
        if (group.agentIds.includes(agentId)) this.groups.putSync([apiKey, group.groupId], { ...group, agentIds: group.agentIds.filter((id) => id !== agentId) });
      }
    });
  }

  private change(apiKey: string, groupId: string, edit: (group: AgentGroup) => AgentGroup): Promise<AgentGroup> {
    return this.store.transaction(() => {
      const next = { ...edit(this.get(apiKey, groupId)), updatedAt: this.now() };
      this.groups.putSync([apiKey, groupId], next);
      return next;
    });
  }
}
