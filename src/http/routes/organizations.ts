// Owns the organization operations (upstream notes 1.4, 2.13): add, get, update, delete, disable state.
import type { Directory } from '../../tenant/directory.js';
import type { OrganizationInput } from '../../tenant/directory/organizations.js';
import { ok, operation, type Operation } from '../operation.js';
import { DEFAULT_PAGE_SIZE } from '../schemas/directory.js';
import {
  addOrganizationsSchema,
  deleteOrganizationsSchema,
  getOrganizationsSchema,
  organizationDisableStateSchema,
  updateOrganizationsSchema,
} from '../schemas/organizations.js';

/** v1 and v2 paths of one operation. */
export const both = (path: string): string[] => [`/v1${path}`, `/v2${path}`];

export function organizationOperations(directory: Directory): Operation[] {
  const { organizations } = directory;
  return [
    operation<{ organizations: OrganizationInput[] }, 'apiKey'>({
      paths: both('/organizations/add'),
      auth: 'apiKey',
      schema: addOrganizationsSchema,
      handle: async (input, ctx) => ok('Organizations processed.', await organizations.add(ctx.identity.apiKey, input.organizations)),
    }),
    operation<{ organizationIds?: string[]; pageSize?: number; pageToken?: string }, 'apiKey'>({
      paths: both('/organizations/get'),
      auth: 'apiKey',
      schema: getOrganizationsSchema,
      handle: (input, ctx) => {
        const page = organizations.get(ctx.identity.apiKey, {
          pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE,
          ...(input.organizationIds === undefined ? {} : { organizationIds: input.organizationIds }),
          ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
        });
        return ok('Organizations retrieved successfully.', page.rows, page.nextPageToken === undefined ? undefined : { nextPageToken: page.nextPageToken });
      },
    }),
    operation<{ organizations: OrganizationInput[] }, 'apiKey'>({
      paths: both('/organizations/update'),
      auth: 'apiKey',
      schema: updateOrganizationsSchema,
      handle: async (input, ctx) => ok('Organizations processed.', await organizations.update(ctx.identity.apiKey, input.organizations)),
    }),
    operation<{ organizationIds: string[] }, 'apiKey'>({
      paths: both('/organizations/delete'),
      auth: 'apiKey',
      schema: deleteOrganizationsSchema,
      handle: async (input, ctx) => ok('Organizations processed.', await organizations.delete(ctx.identity.apiKey, input.organizationIds)),
    }),
    operation<{ organizationIds: string[]; disabled: boolean }, 'apiKey'>({
      paths: both('/organizations/access/disablestate/update'),
      auth: 'apiKey',
      schema: organizationDisableStateSchema,
      handle: async (input, ctx) =>
        ok('Organization disable state updated.', await organizations.setDisabled(ctx.identity.apiKey, input.organizationIds, input.disabled)),
    }),
  ];
}
