// Owns the permission provider operations: config get/update (upstream 2.8) and Generate Signature (upstream 2.12).
import { ok, operation, type Operation } from '../operation.js';
import { arrayOf, idString, object } from '../schemas/common.js';
import type { PermissionProvider, PermissionProviderUpdate, ProviderPermission } from '../../tenant/permission-provider.js';

const updateSchema = object(
  {
    usePermissionProvider: { type: 'boolean' },
    permissionProviderConfig: object({ permissionProviderUrl: { type: 'string', maxLength: 2048 }, authToken: { type: 'string', maxLength: 4096 } }),
  },
  [],
);

const permission = object(
  {
    userId: idString,
    resourceId: idString,
    type: { enum: ['organization', 'folder', 'document'] },
    hasAccess: { type: 'boolean' },
    accessRole: { enum: ['viewer', 'editor'] },
    expiresAt: { type: 'number', minimum: 0 },
  },
  ['userId', 'resourceId', 'type', 'hasAccess'],
);
const signatureSchema = object({ permissions: arrayOf(permission, { min: 1, max: 1000 }) }, ['permissions']);

export function permissionProviderOperations(provider: PermissionProvider): Operation[] {
  return [
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/permissionproviderconfig/get'],
      auth: 'apiKey',
      schema: object({}),
      handle: (_input, ctx) => ok('Permission provider config retrieved successfully.', provider.config(ctx.identity.apiKey)),
    }),
    operation<PermissionProviderUpdate, 'apiKey'>({
      paths: ['/v2/workspace/permissionproviderconfig/update'],
      auth: 'apiKey',
      schema: updateSchema,
      handle: async (input, ctx) => {
        await provider.update(ctx.identity.apiKey, input);
        // Upstream answers only {status, message} here.
        return ok('Permission provider config updated successfully.', null);
      },
    }),
    operation<{ permissions: ProviderPermission[] }, 'apiKey'>({
      paths: ['/v2/auth/generate_signature'],
      auth: 'apiKey',
      schema: signatureSchema,
      handle: (input, ctx) => ok('Signature generated successfully.', { signature: provider.sign(ctx.identity.apiKey, input.permissions) }),
    }),
  ];
}
