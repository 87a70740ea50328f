// Owns the JSON schemas of the presence operations (spec 2.19, 4.11; upstream notes 2.21).
import { arrayOf, idString, object } from './common.js';

const documentScope = { organizationId: idString, documentId: idString };

export const presenceUser = object(
  {
    userId: idString,
    name: { type: 'string', maxLength: 2048 },
    email: { type: 'string', maxLength: 2048 },
    status: { type: 'string', minLength: 1, maxLength: 256 },
  },
  ['userId'],
);

export const setPresenceSchema = object({ ...documentScope, users: arrayOf(presenceUser, { min: 1, max: 1000 }) }, ['organizationId', 'documentId', 'users']);

export const deletePresenceSchema = object({ ...documentScope, userIds: arrayOf(idString, { min: 1, max: 1000 }) }, ['organizationId', 'documentId', 'userIds']);

export const getPresenceSchema = object(
  { ...documentScope, userIds: arrayOf(idString, { min: 1, max: 1000 }), statuses: arrayOf({ type: 'string', minLength: 1 }, { min: 1, max: 30 }) },
  ['organizationId', 'documentId'],
);
