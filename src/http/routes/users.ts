// Owns the users operations (upstream notes 1.3, 2.11): add, get, update, delete at organization, folder or document level.
import type { Directory } from '../../tenant/directory.js';
import { grantRef, type UserInput, type UserScope } from '../../tenant/directory/users.js';
import { ok, operation, type Operation } from '../operation.js';
import { DEFAULT_PAGE_SIZE } from '../schemas/directory.js';
import { addUsersSchema, deleteUsersSchema, getUsersSchema, updateUsersSchema } from '../schemas/users.js';
import { both } from './organizations.js';

/** The scope fields of a users request, without undefined members (exactOptionalPropertyTypes). */
function scopeOf(input: UserScope): UserScope {
  const scope: UserScope = {
    organizationId: input.organizationId,
    ...(input.documentId === undefined ? {} : { documentId: input.documentId }),
    ...(input.folderId === undefined ? {} : { folderId: input.folderId }),
  };
  grantRef(scope);
  return scope;
}

export function userOperations(directory: Directory): Operation[] {
  const { users } = directory;
  return [
    operation<UserScope & { users: UserInput[]; createFolder?: boolean }, 'apiKey'>({
      paths: both('/users/add'),
      auth: 'apiKey',
      schema: addUsersSchema,
      handle: async (input, ctx) =>
        ok('Users processed.', await users.add(ctx.identity.apiKey, scopeOf(input), input.users, input.createFolder === undefined ? {} : { createFolder: input.createFolder })),
    }),
    operation<UserScope & { userIds?: string[]; organizationUserGroupIds?: string[]; pageSize?: number; pageToken?: string }, 'apiKey'>({
      paths: both('/users/get'),
      auth: 'apiKey',
      schema: getUsersSchema,
      handle: (input, ctx) => {
        const page = users.get(ctx.identity.apiKey, scopeOf(input), {
          pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE,
          ...(input.userIds === undefined ? {} : { userIds: input.userIds }),
          ...(input.organizationUserGroupIds === undefined ? {} : { organizationUserGroupIds: input.organizationUserGroupIds }),
          ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
        });
        return ok('Users retrieved successfully.', page.rows, page.nextPageToken === undefined ? undefined : { nextPageToken: page.nextPageToken });
      },
    }),
    operation<UserScope & { users: UserInput[] }, 'apiKey'>({
      paths: both('/users/update'),
      auth: 'apiKey',
      schema: updateUsersSchema,
      handle: async (input, ctx) => ok('Users processed.', await users.update(ctx.identity.apiKey, scopeOf(input), input.users)),
    }),
    operation<UserScope & { userIds: string[] }, 'apiKey'>({
      paths: both('/users/delete'),
      auth: 'apiKey',
      schema: deleteUsersSchema,
      handle: async (input, ctx) => ok('Users processed.', await users.delete(ctx.identity.apiKey, scopeOf(input), input.userIds)),
    }),
  ];
}
