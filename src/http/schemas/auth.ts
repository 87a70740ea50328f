// Owns the JSON schemas of the user-token and permission operations (spec 2.2, 4.2; upstream notes 2.12).
import { arrayOf, idString, object } from './common.js';

export const permissionResource = object(
  {
    type: { enum: ['organization', 'document', 'folder'] },
    id: idString,
    organizationId: idString,
    accessRole: { enum: ['viewer', 'editor'] },
    expiresAt: { type: 'number', minimum: 0 },
  },
  ['type', 'id'],
);

export const generateTokenSchema = object(
  {
    userId: idString,
    userProperties: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        email: { type: 'string' },
        isAdmin: { type: 'boolean' },
      },
      required: ['name', 'email'],
    },
    permissions: object({ resources: arrayOf(permissionResource, { max: 1000 }) }, ['resources']),
  },
  ['userId', 'userProperties', 'permissions'],
);
