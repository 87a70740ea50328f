// Owns the recordings operations: get (upstream 2.21) and Plait's add and delete (recorder annotations, URLs not bytes).
import type { RecordingInput, Recordings } from '../../doc/recordings.js';
import { ok, operation, type Operation } from '../operation.js';
import { DEFAULT_PAGE_SIZE } from '../schemas/directory.js';
import { addRecordingsSchema, deleteRecordingsSchema, getRecordingsSchema } from '../schemas/recordings.js';

interface DocumentScope {
  organizationId: string;
  documentId: string;
}

export function recordingOperations(recordings: Recordings): Operation[] {
  return [
    operation<{ organizationId: string; documentId?: string; recordingIds?: string[]; pageSize?: number; pageToken?: string }, 'apiKey'>({
      paths: ['/v2/recordings/get'],
      auth: 'apiKey',
      schema: getRecordingsSchema,
      handle: async (input, ctx) => {
        const page = await recordings.get(ctx.identity.apiKey, {
          organizationId: input.organizationId,
          pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE,
          ...(input.documentId === undefined ? {} : { documentId: input.documentId }),
          ...(input.recordingIds === undefined ? {} : { recordingIds: input.recordingIds }),
          ...(input.pageToken === undefined ? {} : { pageToken: input.pageToken }),
        });
        // Upstream names the cursor `pageToken` for recordings (upstream notes 5).
        return ok('Recordings retrieved successfully.', page.rows, page.pageToken === undefined ? undefined : { pageToken: page.pageToken });
      },
    }),
    operation<DocumentScope & { recordings: RecordingInput[] }, 'apiKey'>({
      paths: ['/v2/recordings/add'],
      auth: 'apiKey',
      schema: addRecordingsSchema,
      handle: async (input, ctx) =>
        ok('Recordings added successfully.', await recordings.add({ apiKey: ctx.identity.apiKey, organizationId: input.organizationId, documentId: input.documentId }, input.recordings)),
    }),
    operation<DocumentScope & { recordingIds: string[] }, 'apiKey'>({
      paths: ['/v2/recordings/delete'],
      auth: 'apiKey',
      schema: deleteRecordingsSchema,
      handle: async (input, ctx) =>
        ok('Recordings processed.', await recordings.delete({ apiKey: ctx.identity.apiKey, organizationId: input.organizationId, documentId: input.documentId }, input.recordingIds)),
    }),
  ];
}
