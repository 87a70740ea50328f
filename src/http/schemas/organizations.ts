// Owns the JSON schemas of the organization operations (upstream notes 1.4, 2.13).
import { idString, object, pageToken } from './common.js';
import { bulkIds, bulkOf, filterIds, nameString, pageSize, updateItem } from './directory.js';

const organization = object({ organizationId: idString, organizationName: nameString }, ['organizationId']);

export const addOrganizationsSchema = object({ organizations: bulkOf(organization) }, ['organizations']);
export const updateOrganizationsSchema = object({ organizations: bulkOf(updateItem(organization)) }, ['organizations']);
export const getOrganizationsSchema = object({ organizationIds: filterIds, pageSize, pageToken });
export const deleteOrganizationsSchema = object({ organizationIds: bulkIds }, ['organizationIds']);
export const organizationDisableStateSchema = object({ organizationIds: bulkIds, disabled: { type: 'boolean' } }, ['organizationIds', 'disabled']);
