// Owns the user-group operations (spec 4.12, 4.17): add groups, add users to a group, delete users from a group.
import { invalidArgument } from '../../errors.js';
import type { Directory } from '../../tenant/directory.js';
import { ok, operation, type Operation } from '../operation.js';
import { addGroupUsersSchema, addUserGroupsSchema, deleteGroupUsersSchema } from '../schemas/usergroups.js';
import { both } from './organizations.js';

export function userGroupOperations(directory: Directory): Operation[] {
  const { groups } = directory;
  return [
    operation<{ organizationId: string; organizationUserGroups: Array<{ groupId: string; groupName?: string }> }, 'apiKey'>({
      paths: both('/organizations/usergroups/add'),
      auth: 'apiKey',
      schema: addUserGroupsSchema,
      handle: async (input, ctx) => ok('User groups processed.', await groups.add(ctx.identity.apiKey, input.organizationId, input.organizationUserGroups)),
    }),
    operation<{ organizationId: string; organizationUserGroupId: string; userIds: string[] }, 'apiKey'>({
      paths: both('/organizations/usergroups/users/add'),
      auth: 'apiKey',
      schema: addGroupUsersSchema,
      handle: async (input, ctx) =>
        ok('Users processed.', await groups.addUsers(ctx.identity.apiKey, input.organizationId, input.organizationUserGroupId, input.userIds)),
    }),
    operation<{ organizationId: string; organizationUserGroupId: string; userIds?: string[]; deleteAll?: boolean }, 'apiKey'>({
      paths: both('/organizations/usergroups/users/delete'),
      auth: 'apiKey',
      schema: deleteGroupUsersSchema,
      handle: async (input, ctx) => {
        const deleteAll = input.deleteAll === true;
        if (!deleteAll && input.userIds === undefined) throw invalidArgument('data.userIds is required unless data.deleteAll is true');
        const target = input.userIds === undefined ? { deleteAll } : { deleteAll, userIds: input.userIds };
        return ok('Users processed.', await groups.deleteUsers(ctx.identity.apiKey, input.organizationId, input.organizationUserGroupId, target));
      },
    }),
  ];
}
