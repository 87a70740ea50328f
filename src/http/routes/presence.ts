// Owns the presence operations: update (spec 4.11), add, delete (upstream notes 2.21) and get (Plait's own shape).
import type { CollabDocuments } from '../../doc/collab-state.js';
import type { PresenceInput } from '../../doc/presence.js';
import { ok, operation, type Operation } from '../operation.js';
import { refOf, type DocumentScope } from './document-scope.js';
import { deletePresenceSchema, getPresenceSchema, setPresenceSchema } from '../schemas/presence.js';


export function presenceOperations(docs: CollabDocuments): Operation[] {
  return [
    operation<DocumentScope & { users: PresenceInput[] }, 'apiKey'>({
      paths: ['/v2/presence/update'],
      auth: 'apiKey',
      schema: setPresenceSchema,
      handle: async (input, ctx) => {
        await docs.presence(refOf(ctx.identity, input), (state) => state.upsert(input.users));
        return ok('Presence updated successfully.', { success: true });
      },
    }),
    operation<DocumentScope & { users: PresenceInput[] }, 'apiKey'>({
      paths: ['/v2/presence/add'],
      auth: 'apiKey',
      schema: setPresenceSchema,
      handle: async (input, ctx) => {
        await docs.presence(refOf(ctx.identity, input), (state) => state.upsert(input.users));
        return ok('Presence added successfully.', { success: true });
      },
    }),
    operation<DocumentScope & { userIds: string[] }, 'apiKey'>({
      paths: ['/v2/presence/delete'],
      auth: 'apiKey',
      schema: deletePresenceSchema,
      handle: async (input, ctx) => {
        await docs.presence(refOf(ctx.identity, input), (state) => state.remove(input.userIds));
        return ok('Presence deleted successfully.', { success: true });
      },
    }),
    operation<DocumentScope & { userIds?: string[]; statuses?: string[] }, 'apiKey'>({
      paths: ['/v2/presence/get'],
      auth: 'apiKey',
      schema: getPresenceSchema,
      handle: async (input, ctx) => {
        const filter = {
          ...(input.userIds === undefined ? {} : { userIds: input.userIds }),
          ...(input.statuses === undefined ? {} : { statuses: input.statuses }),
        };
        const users = await docs.read(refOf(ctx.identity, input), (doc) => doc.presence.list(filter));
        return ok('Presence fetched successfully.', users);
      },
    }),
  ];
}
