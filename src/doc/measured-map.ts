// Owns a Map that keeps the sum of its values' estimated sizes as entries are set and deleted (comment threads, presence records held beside a document).

/**
 * About the length of `value` as JSON, without building it: strings by their length (escapes not counted), numbers by
 * their rough number of digits. For the loaded-documents budget, which needs sizes, not exact bytes: measuring a new
 * thread by `JSON.stringify` (and remembering it in WeakMaps) cost ~2.5–3 µs a REST comment, this ~0.2 µs
 * (bench/README.md, "Twenty-first session: annotation ids and the budget's measure").
 */
export function jsonLength(value: unknown, skip?: string): number {
  switch (typeof value) {
    case 'string':
      return value.length + 2;
    case 'number':
      // Digits roughly: small counts, ids and sizes, and millisecond times (13).
      return value < 10 && value >= 0 ? 1 : value < 1000 && value > -100 ? 3 : value < 1e7 && value > -1e6 ? 6 : 13;
    case 'boolean':
      return 5;
    case 'object': {
      if (value === null) return 4;
      let length = 2;
      if (Array.isArray(value)) {
        for (const item of value as readonly unknown[]) length += jsonLength(item) + 1;
        return length;
      }
      for (const key in value) {
        if (key === skip) continue;
        const field = (value as Record<string, unknown>)[key];
        if (field !== undefined) length += key.length + 4 + jsonLength(field);
      }
      return length;
    }
    default:
      return 0;
  }
}

/**
 * A Map whose `bytes` is the sum of `sizeOf` over its values, kept as they are set and deleted (a change measures the
 * value it puts and the one it replaces, nothing else), so the loaded-documents budget can ask what a document holds
 * at every lease without a walk of its threads or users.
 */
export class MeasuredMap<K, V> extends Map<K, V> {
  private total = 0;

  constructor(private readonly sizeOf: (value: V) => number) {
    super();
  }

  get bytes(): number {
    return this.total;
  }

  override set(key: K, value: V): this {
    const before = super.get(key);
    if (before !== undefined) this.total -= this.sizeOf(before);
    this.total += this.sizeOf(value);
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    const before = super.get(key);
    if (before !== undefined) this.total -= this.sizeOf(before);
    return super.delete(key);
  }

  override clear(): void {
    this.total = 0;
    super.clear();
  }
}
