// Owns the users operations (upstream notes 1.3, 2.11): add, get, update, delete at organization, folder or document level.
import type { Directory } from '../../tenant/directory.js';
import { grantRef, type UserInput, type UserScope } from '../../tenant/directory/users.js';
import { invalidArgument } from '../../errors.js';
import { ok, operation, type Operation, type Reply } from '../operation.js';
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
    operation<GetUsersInput, 'apiKey'>({
      paths: both('/users/get'),
      auth: 'apiKey',
      schema: getUsersSchema,
      handle: (input, ctx) => getUsers(directory, ctx.identity.apiKey, input),
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

type GetUsersInput = UserScope & {
  userIds?: string[];
  organizationUserGroupIds?: string[];
  allDocuments?: boolean;
  groupByDocumentId?: boolean;
  pageSize?: number;
  pageToken?: string;
};

/** A page of users: at one level, or (allDocuments) on every document of the organization; grouped by document on request. */
async function getUsers(directory: Directory, apiKey: string, input: GetUsersInput): Promise<Reply> {
  const pageSize = input.pageSize ?? DEFAULT_PAGE_SIZE;
  const next = (token: string | undefined) => (token === undefined ? undefined : { nextPageToken: token });
  if (input.allDocuments === true) {
    if (input.documentId !== undefined || input.folderId !== undefined) {
      throw invalidArgument('data.allDocuments lists the users of every document of the organization; it cannot be combined with data.documentId or data.folderId');
    }
    if (input.organizationUserGroupIds !== undefined) throw invalidArgument('data.organizationUserGroupIds cannot be combined with data.allDocuments');
    const page = await directory.users.onDocuments(apiKey, input.organizationId, {
      pageSize,
      ...(input.userIds === undefined ? {} : { userIds: input.userIds }),
      ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
    });
    if (input.groupByDocumentId !== true) return ok('Users retrieved successfully.', page.rows, next(page.nextPageToken));
    const grouped = new Map<string, unknown[]>();
    for (const { documentId, ...user } of page.rows) {
      const list = grouped.get(documentId) ?? [];
      list.push(user);
      grouped.set(documentId, list);
    }
    return ok('Users retrieved successfully.', Object.fromEntries(grouped), next(page.nextPageToken));
  }
  if (input.groupByDocumentId === true && input.documentId === undefined) {
    throw invalidArgument('data.groupByDocumentId needs data.allDocuments or data.documentId: only document-level users have a document to group by');
  }
  const page = await directory.users.get(apiKey, scopeOf(input), {
    pageSize,
    ...(input.userIds === undefined ? {} : { userIds: input.userIds }),
    ...(input.organizationUserGroupIds === undefined ? {} : { organizationUserGroupIds: input.organizationUserGroupIds }),
    ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
  });
  const data = input.groupByDocumentId === true && input.documentId !== undefined ? { [input.documentId]: page.rows } : page.rows;
  return ok('Users retrieved successfully.', data, next(page.nextPageToken));
}
