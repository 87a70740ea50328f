// Owns the agent definition operations: create, get, update, versions, delete (spec 4.14, 4.20) and agent groups (upstream notes 1.10).
import type { AgentDefinitions, IdentityInput, ListFilter } from '../../agents/definitions.js';
import type { AgentGroups, GroupInput } from '../../agents/groups.js';
import { ok, operation, type Operation } from '../operation.js';
import {
  agentIdSchema,
  createAgentSchema,
  createGroupSchema,
  getAgentsSchema,
  groupIdSchema,
  groupMembersSchema,
  listGroupsSchema,
  restoreVersionSchema,
  updateAgentSchema,
  updateGroupSchema,
  updateVersionSchema,
} from '../schemas/agents.js';

type Body = Readonly<Record<string, unknown>>;

export function agentOperations(agents: AgentDefinitions, groups: AgentGroups): Operation[] {
  return [
    operation<Body & Required<IdentityInput>, 'apiKey'>({
      paths: ['/v2/agents/create'],
      auth: 'apiKey',
      schema: createAgentSchema,
      handle: async (input, ctx) => ok('Agent created successfully.', await agents.create(ctx.identity.apiKey, input)),
    }),
    operation<{ agentId?: string; filter?: ListFilter; groupId?: string }, 'apiKey'>({
      paths: ['/v2/agents/get'],
      auth: 'apiKey',
      schema: getAgentsSchema,
      handle: (input, ctx) => {
        const apiKey = ctx.identity.apiKey;
        if (input.agentId !== undefined) return ok('Agent fetched successfully.', { agent: agents.get(apiKey, input.agentId) });
        const rows = agents.list(apiKey, input.filter);
        if (input.groupId === undefined) return ok('Agents fetched successfully.', { agents: rows });
        // Members in the group's order; ids that no longer resolve (or that the filter drops) are left out.
        const byId = new Map(rows.map((row) => [row.id, row]));
        const members = groups.get(apiKey, input.groupId).agentIds.flatMap((id) => byId.get(id) ?? []);
        return ok('Agents fetched successfully.', { agents: members });
      },
    }),
    operation<{ agentId: string } & IdentityInput, 'apiKey'>({
      paths: ['/v2/agents/update'],
      auth: 'apiKey',
      schema: updateAgentSchema,
      handle: async (input, ctx) => {
        const { agentId, ...fields } = input;
        return ok('Agent updated successfully.', { agent: await agents.updateIdentity(ctx.identity.apiKey, agentId, fields) });
      },
    }),
    operation<Body & { agentId: string }, 'apiKey'>({
      paths: ['/v2/agents/version/update'],
      auth: 'apiKey',
      schema: updateVersionSchema,
      handle: async (input, ctx) => ok('Agent version created successfully.', await agents.updateBehaviour(ctx.identity.apiKey, input.agentId, input)),
    }),
    operation<{ agentId: string }, 'apiKey'>({
      paths: ['/v2/agents/versions/list'],
      auth: 'apiKey',
      schema: agentIdSchema,
      handle: (input, ctx) => ok('Agent versions fetched successfully.', { agentId: input.agentId, versions: agents.listVersions(ctx.identity.apiKey, input.agentId) }),
    }),
    operation<{ agentId: string; version?: number }, 'apiKey'>({
      paths: ['/v2/agents/versions/restore'],
      auth: 'apiKey',
      schema: restoreVersionSchema,
      handle: async (input, ctx) => ok('Agent version restored successfully.', await agents.restore(ctx.identity.apiKey, input.agentId, input.version)),
    }),
    operation<{ agentId: string }, 'apiKey'>({
      paths: ['/v2/agents/delete'],
      auth: 'apiKey',
      schema: agentIdSchema,
      handle: async (input, ctx) => {
        await agents.delete(ctx.identity.apiKey, input.agentId);
        await groups.forgetAgent(ctx.identity.apiKey, input.agentId);
        return ok('Agent deleted successfully.', { agentId: input.agentId });
      },
    }),
    ...groupOperations(groups),
  ];
}

function groupOperations(groups: AgentGroups): Operation[] {
  return [
    operation<{ name: string } & GroupInput, 'apiKey'>({
      paths: ['/v2/agents/groups/create'],
      auth: 'apiKey',
      schema: createGroupSchema,
      handle: async (input, ctx) => {
        const group = await groups.create(ctx.identity.apiKey, input);
        return ok('Agent group created successfully.', { groupId: group.groupId, group });
      },
    }),
    operation<{ groupId: string }, 'apiKey'>({
      paths: ['/v2/agents/groups/get'],
      auth: 'apiKey',
      schema: groupIdSchema,
      handle: (input, ctx) => ok('Agent group fetched successfully.', { group: groups.get(ctx.identity.apiKey, input.groupId) }),
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/agents/groups/list'],
      auth: 'apiKey',
      schema: listGroupsSchema,
      handle: (_input, ctx) => ok('Agent groups fetched successfully.', { groups: groups.list(ctx.identity.apiKey) }),
    }),
    operation<{ groupId: string } & GroupInput, 'apiKey'>({
      paths: ['/v2/agents/groups/update'],
      auth: 'apiKey',
      schema: updateGroupSchema,
      handle: async (input, ctx) => {
        const { groupId, ...fields } = input;
        return ok('Agent group updated successfully.', { group: await groups.update(ctx.identity.apiKey, groupId, fields) });
      },
    }),
    operation<{ groupId: string }, 'apiKey'>({
      paths: ['/v2/agents/groups/delete'],
      auth: 'apiKey',
      schema: groupIdSchema,
      handle: async (input, ctx) => {
        await groups.delete(ctx.identity.apiKey, input.groupId);
        return ok('Agent group deleted successfully.', { groupId: input.groupId });
      },
    }),
    operation<{ groupId: string; agentIds: string[] }, 'apiKey'>({
      paths: ['/v2/agents/groups/add-agents'],
      auth: 'apiKey',
      schema: groupMembersSchema,
      handle: async (input, ctx) => ok('Agents added to group successfully.', { group: await groups.addAgents(ctx.identity.apiKey, input.groupId, input.agentIds) }),
    }),
    operation<{ groupId: string; agentIds: string[] }, 'apiKey'>({
      paths: ['/v2/agents/groups/remove-agents'],
      auth: 'apiKey',
      schema: groupMembersSchema,
      handle: async (input, ctx) => ok('Agents removed from group successfully.', { group: await groups.removeAgents(ctx.identity.apiKey, input.groupId, input.agentIds) }),
    }),
  ];
}
