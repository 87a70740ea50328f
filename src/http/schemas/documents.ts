// Owns the JSON schemas of the document operations (spec 2.8, 4.21; upstream notes 1.6, 2.14).
import { idString, object, pageToken } from './common.js';
import { accessType, bulkIds, bulkOf, filterIds, nameString, pageSize, updateItem } from './directory.js';

const document = object({ documentId: idString, documentName: nameString, accessType }, ['documentId']);

export const addDocumentsSchema = object(
  {
    organizationId: idString,
    documents: bulkOf(document),
    folderId: idString,
    createFolder: { type: 'boolean' },
    createOrganization: { type: 'boolean' },
  },
  ['organizationId', 'documents'],
);

export const getDocumentsSchema = object({ organizationId: idString, documentIds: filterIds, folderId: idString, pageSize, pageToken }, ['organizationId']);

export const updateDocumentsSchema = object({ organizationId: idString, documents: bulkOf(updateItem(document)) }, ['organizationId', 'documents']);

export const deleteDocumentsSchema = object({ organizationId: idString, documentIds: bulkIds }, ['organizationId', 'documentIds']);

/** folderId "root" moves the documents to the top of the organization. */
export const moveDocumentsSchema = object({ organizationId: idString, documentIds: { ...filterIds, minItems: 1 }, folderId: idString }, [
  'organizationId',
  'documentIds',
  'folderId',
]);

export const documentAccessSchema = object({ organizationId: idString, documentIds: bulkIds, accessType }, ['organizationId', 'documentIds', 'accessType']);

export const documentDisableStateSchema = object({ organizationId: idString, documentIds: bulkIds, disabled: { type: 'boolean' } }, [
  'organizationId',
  'documentIds',
  'disabled',
]);
