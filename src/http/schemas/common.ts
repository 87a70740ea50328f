// Owns JSON-schema building blocks shared by every area's schemas.
import { MAX_FREE_JSON_BYTES, MAX_ID_BYTES, MAX_ID_CHARS } from '../../limits.js';

export const nonEmptyString = { type: 'string', minLength: 1 } as const;
/**
 * Characters an id may not hold: U+0000-U+0004 are the separator and type bytes of LMDB's key encoding
 * (ordered-binary), which escapes them only in strings under 64 characters. A longer id holding one was written raw and
 * its key read back split into other parts: the range deletes of its document or organization threw (500).
 */
export const ID_PATTERN = '^[^\\u0000-\\u0004]*$';
/** Ids and keys: characters for the spec, bytes for LMDB (src/limits.ts), none of the key encoding's reserved characters. */
export const idString = { type: 'string', minLength: 1, maxLength: MAX_ID_CHARS, maxBytes: MAX_ID_BYTES, pattern: ID_PATTERN } as const;
/** A free-form JSON object stored as sent (comment context, attachments): nesting is capped for every body in src/http/body.ts. */
export const freeObject = { type: 'object', maxJsonBytes: MAX_FREE_JSON_BYTES } as const;
export const emailString = { type: 'string', format: 'email', maxLength: 320 } as const;
export const httpUrl = { type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2048 } as const;
export const pageToken = { type: 'string', minLength: 1, maxLength: 1024 } as const;

export const emptyData = { type: 'object', additionalProperties: true } as const;

export function object(properties: Record<string, object>, required: readonly string[] = [], additional = true): object {
  return { type: 'object', properties, required: [...required], additionalProperties: additional };
}

export function arrayOf(items: object, limits: { min?: number; max?: number } = {}): object {
  return {
    type: 'array',
    items,
    ...(limits.min === undefined ? {} : { minItems: limits.min }),
    ...(limits.max === undefined ? {} : { maxItems: limits.max }),
  };
}
