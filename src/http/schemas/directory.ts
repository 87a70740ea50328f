// Owns JSON-schema pieces shared by the directory areas (organizations, documents, folders, users, groups, permissions).
import { MAX_FREE_JSON_BYTES } from '../../limits.js';
import { arrayOf, idString } from './common.js';

/** Items per bulk call; larger batches go in several calls (one LMDB transaction each). */
export const MAX_BULK_ITEMS = 1000;
/** Id filters on reads (spec 8: documentIds at most 30; upstream applies the same cap to every id filter). */
export const MAX_FILTER_IDS = 30;
export const MAX_PAGE_SIZE = 1000;
export const DEFAULT_PAGE_SIZE = 1000;

export const accessType = { enum: ['public', 'organizationPrivate', 'restricted'] } as const;
export const accessRole = { enum: ['viewer', 'editor'] } as const;
export const nameString = { type: 'string', maxLength: 1000 } as const;
export const pageSize = { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE } as const;

export const bulkIds = arrayOf(idString, { min: 1, max: MAX_BULK_ITEMS });
export const filterIds = arrayOf(idString, { max: MAX_FILTER_IDS });

/** An array of item objects for a bulk write. */
export function bulkOf(item: object): object {
  // Each item's unknown fields are kept as its metadata: the item as a whole is capped like any free-form field.
  return arrayOf({ ...item, maxJsonBytes: MAX_FREE_JSON_BYTES }, { min: 1, max: MAX_BULK_ITEMS });
}

/** An update item: its id plus at least one field to change (spec 7: an update with only the id is INVALID_ARGUMENT). */
export function updateItem(item: object): object {
  return { ...item, minProperties: 2 };
}
