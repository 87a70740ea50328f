// Owns the /v2/auth operations: Generate Token (spec 4.2) and permissions add / get / remove (upstream notes 2.12).
import type { TokenResource, UserProperties, UserTokens } from '../../auth/user-tokens.js';
import { invalidArgument } from '../../errors.js';
import type { Directory } from '../../tenant/directory.js';
import type { Grantee, PermissionResource } from '../../tenant/directory/permissions.js';
import { ok, operation, type Operation } from '../operation.js';
import { addPermissionsSchema, generateTokenSchema, getPermissionsSchema, removePermissionsSchema } from '../schemas/auth.js';

interface GenerateTokenInput {
  userId: string;
  userProperties: UserProperties & { name: string; email: string };
  permissions: { resources: TokenResource[] };
}

/** Resources of type document or folder must name their organization (spec 2.2). */
export function checkResources(resources: readonly TokenResource[], path: string): void {
  resources.forEach((resource, index) => {
    if (resource.type !== 'organization' && resource.organizationId === undefined) {
      throw invalidArgument(`${path}[${index}].organizationId is required for a ${resource.type} resource`);
    }
  });
}

export function authOperations(userTokens: UserTokens): Operation[] {
  return [
    operation<GenerateTokenInput, 'apiKey'>({
      paths: ['/v2/auth/generate_token'],
      auth: 'apiKey',
      schema: generateTokenSchema,
      handle: async (input, ctx) => {
        if ('organizationId' in input.userProperties) {
          throw invalidArgument(
            'data.userProperties.organizationId is not accepted; pass the organization as a permissions resource of type "organization"',
          );
        }
        checkResources(input.permissions.resources, 'data.permissions.resources');
        const token = await userTokens.sign({
          userId: input.userId,
          apiKey: ctx.identity.apiKey,
          userProperties: input.userProperties,
          resources: input.permissions.resources,
        });
        return ok('Token generated successfully.', { token });
      },
    }),
  ];
}

interface GroupGranteeInput {
  organizationId: string;
  organizationUserGroupId: string;
}

/** Exactly one grantee: a user (named by `userField`) or a user group. */
function granteeOf(userId: string | undefined, group: GroupGranteeInput | undefined, userField: string): Grantee {
  if (userId !== undefined && group !== undefined) {
    throw invalidArgument(`${userField} and data.organizationUserGroup cannot both be set: a permission has one grantee`);
  }
  if (userId !== undefined) return { userId };
  if (group !== undefined) return { organizationId: group.organizationId, groupId: group.organizationUserGroupId };
  throw invalidArgument(`${userField} is required (or data.organizationUserGroup to grant a user group)`);
}

export function permissionOperations(directory: Directory): Operation[] {
  const { permissions } = directory;
  return [
    operation<{ user?: { userId: string }; organizationUserGroup?: GroupGranteeInput; permissions: { resources: PermissionResource[] } }, 'apiKey'>({
      paths: ['/v2/auth/permissions/add'],
      auth: 'apiKey',
      schema: addPermissionsSchema,
      handle: async (input, ctx) => {
        const grantee = granteeOf(input.user?.userId, input.organizationUserGroup, 'data.user.userId');
        checkResources(input.permissions.resources, 'data.permissions.resources');
        return ok('Permissions processed.', await permissions.add(ctx.identity.apiKey, grantee, input.permissions.resources));
      },
    }),
    operation<{ userId?: string; organizationUserGroup?: GroupGranteeInput; permissions: { resources: PermissionResource[] } }, 'apiKey'>({
      paths: ['/v2/auth/permissions/remove'],
      auth: 'apiKey',
      schema: removePermissionsSchema,
      handle: async (input, ctx) => {
        const grantee = granteeOf(input.userId, input.organizationUserGroup, 'data.userId');
        checkResources(input.permissions.resources, 'data.permissions.resources');
        return ok('Permissions processed.', await permissions.remove(ctx.identity.apiKey, grantee, input.permissions.resources));
      },
    }),
    operation<{ organizationId: string; userIds: string[]; folderIds?: string[]; documentIds?: string[] }, 'apiKey'>({
      paths: ['/v2/auth/permissions/get'],
      auth: 'apiKey',
      schema: getPermissionsSchema,
      handle: (input, ctx) =>
        ok(
          'Permissions retrieved successfully.',
          permissions.get(ctx.identity.apiKey, input.organizationId, input.userIds, {
            ...(input.folderIds === undefined ? {} : { folderIds: input.folderIds }),
            ...(input.documentIds === undefined ? {} : { documentIds: input.documentIds }),
          }),
        ),
    }),
  ];
}
