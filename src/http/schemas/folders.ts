// Owns the JSON schemas of the folder operations (spec 2.9, 4.22; upstream notes 1.5, 2.15).
import { idString, object } from './common.js';
import { accessType, bulkIds, bulkOf, nameString, updateItem } from './directory.js';

const folder = object({ folderId: idString, folderName: nameString, parentFolderId: idString, accessType }, ['folderId']);

export const addFoldersSchema = object({ organizationId: idString, folders: bulkOf(folder), createOrganization: { type: 'boolean' } }, [
  'organizationId',
  'folders',
]);

export const getFoldersSchema = object({ organizationId: idString, folderId: idString, maxDepth: { type: 'integer', minimum: 0, maximum: 100 } }, [
  'organizationId',
]);

/** Unknown item fields are refused: an update that changes nothing would otherwise pass silently. */
export const updateFoldersSchema = object(
  { organizationId: idString, folders: bulkOf(updateItem(object({ folderId: idString, folderName: nameString, parentFolderId: idString }, ['folderId'], false))) },
  ['organizationId', 'folders'],
);

export const deleteFolderSchema = object({ organizationId: idString, folderId: idString }, ['organizationId', 'folderId']);

export const folderAccessSchema = object({ organizationId: idString, folderIds: bulkIds, accessType, inheritFromParent: { type: 'boolean' } }, [
  'organizationId',
  'folderIds',
]);
