// Owns the JSON schemas of the user-token and permission operations (spec 2.2, 4.2; upstream notes 2.12).
import { MAX_FREE_JSON_BYTES } from '../../limits.js';
import { arrayOf, idString, object } from './common.js';
import { MAX_BULK_ITEMS, filterIds } from './directory.js';

export const permissionResource = object(
  {
    type: { enum: ['organization', 'document', 'folder'] },
    id: idString,
    organizationId: idString,
    accessRole: { enum: ['viewer', 'editor'] },
    expiresAt: { type: 'number', minimum: 0, maximum: 8.64e15 },
  },
  ['type', 'id'],
);

export const generateTokenSchema = object(
  {
    userId: idString,
    userProperties: {
      type: 'object',
      maxJsonBytes: MAX_FREE_JSON_BYTES,
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

/** A user group as grantee (extension: upstream grants users only). */
const groupGrantee = object({ organizationId: idString, organizationUserGroupId: idString }, ['organizationId', 'organizationUserGroupId']);

/** Exactly one of `user` and `organizationUserGroup`; the handler names the missing one. */
export const addPermissionsSchema = object(
  {
    user: object({ userId: idString }, ['userId']),
    organizationUserGroup: groupGrantee,
    permissions: object({ resources: arrayOf(permissionResource, { min: 1, max: MAX_BULK_ITEMS }) }, ['resources']),
  },
  ['permissions'],
);

const resourceRef = object(
  { type: { enum: ['organization', 'document', 'folder'] }, id: idString, organizationId: idString },
  ['type', 'id'],
);

/** Upstream puts `userId` at the top level here (not under `user`). */
export const removePermissionsSchema = object(
  {
    userId: idString,
    organizationUserGroup: groupGrantee,
    permissions: object({ resources: arrayOf(resourceRef, { min: 1, max: MAX_BULK_ITEMS }) }, ['resources']),
  },
  ['permissions'],
);

export const getPermissionsSchema = object(
  { organizationId: idString, userIds: { ...filterIds, minItems: 1 }, folderIds: filterIds, documentIds: filterIds },
  ['organizationId', 'userIds'],
);
