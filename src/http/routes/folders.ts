// Owns the folder operations (spec 4.22; upstream notes 1.5, 2.15): add, get, update (rename, re-parent), delete, access.
import { invalidArgument } from '../../errors.js';
import type { AccessType } from '../../tenant/api-key-config.js';
import type { Directory } from '../../tenant/directory.js';
import type { FolderInput } from '../../tenant/directory/folders.js';
import { ok, operation, type Operation } from '../operation.js';
import { addFoldersSchema, deleteFolderSchema, folderAccessSchema, getFoldersSchema, updateFoldersSchema } from '../schemas/folders.js';
import { both } from './organizations.js';

export function folderOperations(directory: Directory): Operation[] {
  const { folders } = directory;
  return [
    operation<{ organizationId: string; folders: FolderInput[] }, 'apiKey'>({
      paths: both('/organizations/folders/add'),
      auth: 'apiKey',
      schema: addFoldersSchema,
      handle: async (input, ctx) => ok('Folders processed.', await folders.add(ctx.identity.apiKey, input.organizationId, input.folders)),
    }),
    operation<{ organizationId: string; folderId?: string; maxDepth?: number }, 'apiKey'>({
      paths: both('/organizations/folders/get'),
      auth: 'apiKey',
      schema: getFoldersSchema,
      handle: (input, ctx) =>
        ok(
          'Folders retrieved successfully.',
          folders.get(ctx.identity.apiKey, input.organizationId, {
            ...(input.folderId === undefined ? {} : { folderId: input.folderId }),
            ...(input.maxDepth === undefined ? {} : { maxDepth: input.maxDepth }),
          }),
        ),
    }),
    operation<{ organizationId: string; folders: Array<{ folderId: string; folderName?: string; parentFolderId?: string }> }, 'apiKey'>({
      paths: both('/organizations/folders/update'),
      auth: 'apiKey',
      schema: updateFoldersSchema,
      handle: async (input, ctx) => ok('Folders processed.', await folders.update(ctx.identity.apiKey, input.organizationId, input.folders)),
    }),
    // Upstream has no v1 folder delete.
    operation<{ organizationId: string; folderId: string }, 'apiKey'>({
      paths: ['/v2/organizations/folders/delete'],
      auth: 'apiKey',
      schema: deleteFolderSchema,
      handle: async (input, ctx) => {
        const removed = await folders.delete(ctx.identity.apiKey, input.organizationId, input.folderId);
        return ok(`Folder deleted with ${removed.folders - 1} subfolder(s) and ${removed.documents} document(s).`, null);
      },
    }),
    operation<{ organizationId: string; folderIds: string[]; accessType?: AccessType; inheritFromParent?: boolean }, 'apiKey'>({
      paths: both('/organizations/folders/access/update'),
      auth: 'apiKey',
      schema: folderAccessSchema,
      handle: async (input, ctx) => {
        const inherit = input.inheritFromParent === true;
        if (!inherit && input.accessType === undefined) throw invalidArgument('data.accessType is required unless data.inheritFromParent is true');
        const change = input.accessType === undefined ? { inherit } : { inherit, accessType: input.accessType };
        return ok('Folder access updated.', await folders.setAccess(ctx.identity.apiKey, input.organizationId, input.folderIds, change));
      },
    }),
  ];
}
