// Owns the JSON schemas of the users operations (spec 2.1; upstream notes 1.3, 2.11).
import { idString, object, pageToken } from './common.js';
import { accessRole, bulkIds, bulkOf, filterIds, nameString, pageSize, updateItem } from './directory.js';

const user = object({ userId: idString, name: nameString, email: nameString, accessRole }, ['userId']);
const scope = { organizationId: idString, documentId: idString, folderId: idString };

export const addUsersSchema = object(
  {
    ...scope,
    users: bulkOf(user),
    createOrganization: { type: 'boolean' },
    createDocument: { type: 'boolean' },
    createFolder: { type: 'boolean' },
  },
  ['organizationId', 'users'],
);

export const updateUsersSchema = object({ ...scope, users: bulkOf(updateItem(user)) }, ['organizationId', 'users']);

export const getUsersSchema = object(
  { ...scope, userIds: filterIds, organizationUserGroupIds: filterIds, allDocuments: { type: 'boolean' }, groupByDocumentId: { type: 'boolean' }, pageSize, pageToken },
  ['organizationId'],
);

export const deleteUsersSchema = object({ ...scope, userIds: bulkIds }, ['organizationId', 'userIds']);
