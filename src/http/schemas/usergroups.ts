// Owns the JSON schemas of the user-group operations (spec 2.10, 4.12, 4.17).
import { idString, object } from './common.js';
import { bulkIds, bulkOf, nameString } from './directory.js';

export const addUserGroupsSchema = object(
  {
    organizationId: idString,
    createOrganization: { type: 'boolean' },
    organizationUserGroups: bulkOf(object({ groupId: idString, groupName: nameString }, ['groupId'])),
  },
  ['organizationId', 'organizationUserGroups'],
);

export const addGroupUsersSchema = object({ organizationId: idString, organizationUserGroupId: idString, userIds: bulkIds }, [
  'organizationId',
  'organizationUserGroupId',
  'userIds',
]);

/** userIds alone or deleteAll alone are both valid (spec 4.12); the handler refuses neither. */
export const deleteGroupUsersSchema = object({ organizationId: idString, organizationUserGroupId: idString, userIds: bulkIds, deleteAll: { type: 'boolean' } }, [
  'organizationId',
  'organizationUserGroupId',
]);
