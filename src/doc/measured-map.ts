// Owns a Map that keeps the sum of its values' estimated sizes as entries are set and deleted (comment threads, presence records held beside a document).

/** Each value's size, measured once per value object: the records held are immutable, a change puts a new object. */
export function memoizedSize<V extends object>(measure: (value: V) => number): (value: V) => number {
  const sizes = new WeakMap<V, number>();
  return (value) => {
    let bytes = sizes.get(value);
    if (bytes === undefined) {
      bytes = measure(value);
      sizes.set(value, bytes);
    }
    return bytes;
  };
}

/**
 * A Map whose `bytes` is the sum of `sizeOf` over its values, kept as they are set and deleted (O(1) a change past the
 * first measure of a value), so the loaded-documents budget can ask what a document holds at every lease without a
 * walk of its threads or users.
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
