// Owns per-item results of bulk operations (spec 4.0.5): a map keyed by item id, failures inside a success envelope.

/** Why one item failed; lets a caller tell a retryable case from a wrong request. */
export type ItemCode = 'not-found' | 'already-exists' | 'duplicate' | 'invalid-argument' | 'failed-precondition';

export interface ItemResult {
  readonly success: boolean;
  readonly message: string;
  readonly code?: ItemCode;
  readonly [extra: string]: unknown;
}

export type BulkMap = Record<string, ItemResult>;

/** Thrown inside a per-item step to fail that item alone; the rest of the batch goes on. */
export class ItemFailure extends Error {
  override readonly name = 'ItemFailure';
  constructor(readonly code: ItemCode, message: string) {
    super(message);
  }
}

/**
 * Collects one result per item id. Kept in a Map so ids such as "__proto__" are ordinary keys, and turned
 * into a plain object only for the reply.
 */
export class BulkResults {
  private readonly results = new Map<string, ItemResult>();

  constructor(private readonly extra: (id: string) => Readonly<Record<string, unknown>> = () => ({})) {}

  ok(id: string, message: string, fields: Readonly<Record<string, unknown>> = {}): void {
    this.results.set(id, { success: true, ...this.extra(id), ...fields, message });
  }

  fail(id: string, code: ItemCode, message: string): void {
    this.results.set(id, { success: false, ...this.extra(id), message, code });
  }

  /** Runs `step` for the item; an ItemFailure it throws becomes that item's result, anything else propagates. */
  attempt(id: string, step: () => string | { message: string; fields: Readonly<Record<string, unknown>> }): void {
    try {
      const outcome = step();
      if (typeof outcome === 'string') this.ok(id, outcome);
      else this.ok(id, outcome.message, outcome.fields);
    } catch (error) {
      if (!(error instanceof ItemFailure)) throw error;
      this.fail(id, error.code, error.message);
    }
  }

  /**
   * Items whose id appears once in the request. An id sent more than once fails as `duplicate` and none of its
   * copies is written: the map has one slot per id, so it could not report two outcomes.
   */
  unique<T>(items: readonly T[], idOf: (item: T) => string, field: string): T[] {
    const counts = idCounts(items, idOf);
    const kept: T[] = [];
    for (const item of items) {
      const id = idOf(item);
      if ((counts.get(id) ?? 0) > 1) this.fail(id, 'duplicate', `${field} "${id}" appears more than once in this request`);
      else kept.push(item);
    }
    return kept;
  }

  get size(): number {
    return this.results.size;
  }

  toJSON(): BulkMap {
    return Object.fromEntries(this.results);
  }
}

/** How many times each id appears in `items`: one appearing more than once fails as `duplicate` (BulkResults.unique). */
export function idCounts<T>(items: readonly T[], idOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(idOf(item), (counts.get(idOf(item)) ?? 0) + 1);
  return counts;
}
