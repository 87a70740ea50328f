// Owns the JSON schemas of the CRDT operations (spec 4.19, upstream notes 2.20).
import { idString, object } from './common.js';

/** Ids become LMDB key parts; control characters are refused (see src/ws/target.ts). */
const documentPart = { ...idString, pattern: '^[^\\u0000-\\u001f\\u007f]+$' } as const;

export const getCrdtSchema = object({ organizationId: documentPart, documentId: documentPart, editorId: documentPart }, [
  'organizationId',
  'documentId',
]);

/** `data` is checked against `type` in the handler, to answer with upstream's message ("Data must be a string for type text."). */
export const writeCrdtSchema = object(
  {
    organizationId: documentPart,
    documentId: documentPart,
    editorId: documentPart,
    type: { enum: ['text', 'map', 'array', 'xml'] },
    data: {},
    contentKey: idString,
  },
  ['organizationId', 'documentId', 'editorId', 'type', 'data'],
);
