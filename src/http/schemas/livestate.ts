// Owns the JSON schema of livestate/broadcast (upstream 2.21).
import { idString, object } from './common.js';

export const broadcastLiveStateSchema = object(
  {
    organizationId: idString,
    documentId: idString,
    liveStateDataId: idString,
    data: {},
    merge: { type: 'boolean' },
  },
  ['organizationId', 'documentId', 'liveStateDataId', 'data'],
);
