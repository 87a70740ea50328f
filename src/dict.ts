// Owns null-prototype records: the only kind of plain object keyed by caller input (`__proto__`, `toString` stay data).

/** An empty record with no prototype: `key in d`, `d[key]` and `d[key] = v` see only what was put in it. JSON.stringify writes it as usual. */
export function dict<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}
