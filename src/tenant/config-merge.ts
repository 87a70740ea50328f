// Owns the deep merge of workspace delivery configs: request values over stored ones, prototype keys ignored.

/** Keys that could reach Object.prototype through a naive merge; dropped at every depth. */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

export type Plain = { [key: string]: unknown };

export function isPlain(value: unknown): value is Plain {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Returns a new object: `base` with `patch` merged in. Objects merge key by key; arrays and scalars replace;
 * `undefined` in the patch keeps the base value. The result has only own data properties (JSON.parse's
 * `__proto__` own key included: it is skipped, never assigned).
 */
export function deepMerge<T>(base: T, patch: unknown): T {
  if (!isPlain(patch)) return (patch === undefined ? base : patch) as T;
  const out: Plain = {};
  if (isPlain(base)) {
    for (const [key, value] of Object.entries(base)) if (!FORBIDDEN.has(key)) out[key] = value;
  }
  for (const [key, value] of Object.entries(patch)) {
    if (FORBIDDEN.has(key) || value === undefined) continue;
    out[key] = isPlain(value) ? deepMerge(out[key], value) : value;
  }
  return out as T;
}

/** A copy without the forbidden keys at any depth (for values stored whole). */
export function sanitize<T>(value: T): T {
  return deepMerge({}, value) as T;
}
