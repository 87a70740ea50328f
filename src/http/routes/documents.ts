// Owns the document operations (spec 4.21; upstream notes 1.6, 2.14): add, get, update, delete, move, access, disable state.
import type { AccessType } from '../../tenant/api-key-config.js';
import type { Directory } from '../../tenant/directory.js';
import type { DocumentInput } from '../../tenant/directory/documents.js';
import { ok, operation, type Operation } from '../operation.js';
import {
  addDocumentsSchema,
  deleteDocumentsSchema,
  documentAccessSchema,
  documentDisableStateSchema,
  getDocumentsSchema,
  moveDocumentsSchema,
  updateDocumentsSchema,
} from '../schemas/documents.js';
import { DEFAULT_PAGE_SIZE } from '../schemas/directory.js';
import { both } from './organizations.js';

interface Scoped {
  organizationId: string;
}

export function documentOperations(directory: Directory): Operation[] {
  const { documents } = directory;
  return [
    operation<Scoped & { documents: DocumentInput[]; folderId?: string; createFolder?: boolean }, 'apiKey'>({
      paths: both('/organizations/documents/add'),
      auth: 'apiKey',
      schema: addDocumentsSchema,
      handle: async (input, ctx) =>
        ok(
          'Documents processed.',
          await documents.add(ctx.identity.apiKey, input.organizationId, input.documents, {
            ...(input.folderId === undefined ? {} : { folderId: input.folderId }),
            ...(input.createFolder === undefined ? {} : { createFolder: input.createFolder }),
          }),
        ),
    }),
    operation<Scoped & { documentIds?: string[]; folderId?: string; pageSize?: number; pageToken?: string }, 'apiKey'>({
      paths: both('/organizations/documents/get'),
      auth: 'apiKey',
      schema: getDocumentsSchema,
      handle: (input, ctx) => {
        const page = documents.get(ctx.identity.apiKey, input.organizationId, {
          pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE,
          ...(input.documentIds === undefined ? {} : { documentIds: input.documentIds }),
          ...(input.folderId === undefined ? {} : { folderId: input.folderId }),
          ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
        });
        // Spec 4.21 names the cursor result.pageToken (other listings use nextPageToken).
        return ok('Documents retrieved successfully.', page.rows, page.nextPageToken === undefined ? undefined : { pageToken: page.nextPageToken });
      },
    }),
    operation<Scoped & { documents: DocumentInput[] }, 'apiKey'>({
      paths: both('/organizations/documents/update'),
      auth: 'apiKey',
      schema: updateDocumentsSchema,
      handle: async (input, ctx) => ok('Documents processed.', await documents.update(ctx.identity.apiKey, input.organizationId, input.documents)),
    }),
    operation<Scoped & { documentIds: string[] }, 'apiKey'>({
      paths: both('/organizations/documents/delete'),
      auth: 'apiKey',
      schema: deleteDocumentsSchema,
      handle: async (input, ctx) => ok('Documents processed.', await documents.delete(ctx.identity.apiKey, input.organizationId, input.documentIds)),
    }),
    operation<Scoped & { documentIds: string[]; folderId: string }, 'apiKey'>({
      paths: both('/organizations/documents/move'),
      auth: 'apiKey',
      schema: moveDocumentsSchema,
      handle: async (input, ctx) =>
        ok('Documents processed.', await documents.move(ctx.identity.apiKey, input.organizationId, input.documentIds, input.folderId)),
    }),
    operation<Scoped & { documentIds: string[]; accessType: AccessType }, 'apiKey'>({
      paths: both('/organizations/documents/access/update'),
      auth: 'apiKey',
      schema: documentAccessSchema,
      handle: async (input, ctx) =>
        ok('Document access updated.', await documents.setAccessType(ctx.identity.apiKey, input.organizationId, input.documentIds, input.accessType)),
    }),
    operation<Scoped & { documentIds: string[]; disabled: boolean }, 'apiKey'>({
      paths: both('/organizations/documents/access/disablestate/update'),
      auth: 'apiKey',
      schema: documentDisableStateSchema,
      handle: async (input, ctx) =>
        ok('Document disable state updated.', await documents.setDisabled(ctx.identity.apiKey, input.organizationId, input.documentIds, input.disabled)),
    }),
  ];
}
