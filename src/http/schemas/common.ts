// Owns JSON-schema building blocks shared by every area's schemas.

export const nonEmptyString = { type: 'string', minLength: 1 } as const;
export const idString = { type: 'string', minLength: 1, maxLength: 256 } as const;
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
