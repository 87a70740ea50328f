// Owns the user-token operations: Generate Token (spec 4.2).
import type { TokenResource, UserProperties, UserTokens } from '../../auth/user-tokens.js';
import { invalidArgument } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import { generateTokenSchema } from '../schemas/auth.js';

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
