// Owns livestate/broadcast (v1 and v2): push a named value to a document, replacing or merging it.
import type { LiveStates } from '../../doc/live-state.js';
import { invalidArgument } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import { broadcastLiveStateSchema } from '../schemas/livestate.js';

/** Largest `data` a broadcast may carry, as JSON; every joiner is sent every value. */
export const MAX_LIVE_STATE_BYTES = 64 * 1024;

interface BroadcastInput {
  organizationId: string;
  documentId: string;
  liveStateDataId: string;
  data: unknown;
  merge?: boolean;
}

export function liveStateOperations(liveStates: LiveStates): Operation[] {
  return [
    operation<BroadcastInput, 'apiKey'>({
      paths: ['/v2/livestate/broadcast', '/v1/livestate/broadcast'],
      auth: 'apiKey',
      schema: broadcastLiveStateSchema,
      handle: async (input, ctx) => {
        const size = Buffer.byteLength(JSON.stringify(input.data));
        if (size > MAX_LIVE_STATE_BYTES) throw invalidArgument(`data.data is ${size} bytes as JSON; at most ${MAX_LIVE_STATE_BYTES}`);
        await liveStates.broadcast(
          { apiKey: ctx.identity.apiKey, organizationId: input.organizationId, documentId: input.documentId },
          input.liveStateDataId,
          input.data,
          input.merge === true,
        );
        return ok('Live state broadcast successfully.', { success: true });
      },
    }),
  ];
}
