// Owns the JSON schemas of the recordings operations (upstream 2.21 get; Plait's add and delete).
import { arrayOf, httpUrl, idString, object, pageToken } from './common.js';
import { bulkIds, filterIds, pageSize } from './directory.js';

const attachment = object(
  {
    attachmentId: idString,
    url: httpUrl,
    mimeType: { type: 'string', minLength: 1, maxLength: 255 },
    name: { type: 'string', minLength: 1, maxLength: 1000 },
    type: { type: 'string', minLength: 1, maxLength: 100 },
    size: { type: 'integer', minimum: 0 },
  },
  ['url', 'mimeType', 'name', 'size'],
);

const recording = object(
  {
    // Refuses ':' as it always has, and what every id refuses (ID_PATTERN, common.ts).
    annotationId: { ...idString, pattern: '^[^:\\u0000-\\u0004]*$' },
    recordingType: { type: 'string', minLength: 1, maxLength: 100 },
    mode: { type: 'string', minLength: 1, maxLength: 100 },
    metadata: { type: 'object' },
    recordedTime: object({ duration: { type: 'number', minimum: 0 }, display: { type: 'string', maxLength: 100 } }, ['duration']),
    displayName: { type: 'string', maxLength: 1000 },
    from: object({ userId: idString, name: { type: 'string', maxLength: 1000 }, email: { type: 'string', maxLength: 320 } }, ['userId']),
    attachments: arrayOf(attachment, { max: 20 }),
  },
  ['recordingType', 'recordedTime', 'attachments'],
);

export const addRecordingsSchema = object(
  { organizationId: idString, documentId: idString, recordings: arrayOf(recording, { min: 1, max: 100 }) },
  ['organizationId', 'documentId', 'recordings'],
);

export const getRecordingsSchema = object({ organizationId: idString, documentId: idString, recordingIds: filterIds, pageSize, pageToken }, ['organizationId']);

export const deleteRecordingsSchema = object({ organizationId: idString, documentId: idString, recordingIds: bulkIds }, ['organizationId', 'documentId', 'recordingIds']);
