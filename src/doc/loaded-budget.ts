// Owns the accounting of loaded documents against their budget: counts and estimated bytes, overall and per API key, in least-recently-used order.
import type { DocumentKey } from '../document-key.js';
import { resourceExhausted } from '../errors.js';
import { budgetCounts, limitRefusals } from '../metrics/instruments.js';

/** The budget's limits (0: none), from MAX_LOADED_DOCUMENTS[_PER_KEY] and MAX_LOADED_DOCUMENT_BYTES[_PER_KEY]. */
export interface LoadedLimits {
  readonly maxLoadedDocuments: number;
  readonly maxLoadedDocumentsPerKey: number;
  readonly maxLoadedDocumentBytes: number;
  readonly maxLoadedDocumentBytesPerKey: number;
}

/** A loaded document as the budget sees it: its key and the bytes it was last estimated at. */
export interface Budgeted {
  readonly key: DocumentKey;
  bytes: number;
}

/** What the budget asks of the registry about one of its documents. */
export interface BudgetHost<E> {
  /** Loaded, with no connection, no lease, nothing queued, and not being unloaded: it may go at once. */
  unloadable(entry: E): boolean;
  /** Held by a connection or a request: it stays, and is passed over. */
  inUse(entry: E): boolean;
  /** Starts the idle unload (final snapshot, then gone); removes `entry` from the budget before it returns. */
  unload(entry: E): void;
}

interface KeyShare<E> {
  /** This key's documents, least recently used first (a Set iterates in insertion order; `touch` re-inserts). */
  readonly recent: Set<E>;
  bytes: number;
}

/**
 * Documents counted here are loaded (or loading) and not being unloaded; the registry removes one as its unload starts,
 * so one overshoot starts one unload, not one per request until the snapshot lands. Every operation is O(1) but the
 * walks of `oldest`, which stop at the first document the caller can unload.
 */
export class LoadedBudget<E extends Budgeted> {
  private readonly recent = new Set<E>();
  private readonly keys = new Map<string, KeyShare<E>>();
  private totalBytes = 0;

  constructor(private readonly limits: LoadedLimits, private readonly host: BudgetHost<E>) {}

  get bytes(): number {
    return this.totalBytes;
  }

  private countOf(apiKey: string): number {
    return this.keys.get(apiKey)?.recent.size ?? 0;
  }

  add(entry: E): void {
    if (this.recent.has(entry)) return;
    this.recent.add(entry);
    let share = this.keys.get(entry.key.apiKey);
    if (share === undefined) this.keys.set(entry.key.apiKey, (share = { recent: new Set(), bytes: 0 }));
    share.recent.add(entry);
    share.bytes += entry.bytes;
    this.totalBytes += entry.bytes;
  }

  remove(entry: E): void {
    if (!this.recent.delete(entry)) return;
    const share = this.keys.get(entry.key.apiKey);
    if (share === undefined) return;
    share.recent.delete(entry);
    share.bytes -= entry.bytes;
    this.totalBytes -= entry.bytes;
    if (share.recent.size === 0) this.keys.delete(entry.key.apiKey);
  }

  /** The document was used: it goes to the young end, overall and in its key's order. */
  touch(entry: E): void {
    if (!this.recent.delete(entry)) return;
    this.recent.add(entry);
    const share = this.keys.get(entry.key.apiKey);
    share?.recent.delete(entry);
    share?.recent.add(entry);
  }

  /** A new estimate of the document's bytes. */
  resize(entry: E, bytes: number): void {
    if (this.recent.has(entry)) {
      const delta = bytes - entry.bytes;
      this.totalBytes += delta;
      const share = this.keys.get(entry.key.apiKey);
      if (share !== undefined) share.bytes += delta;
    }
    entry.bytes = bytes;
  }

  /** Past MAX_LOADED_DOCUMENTS or MAX_LOADED_DOCUMENT_BYTES. */
  over(): boolean {
    const { maxLoadedDocuments: count, maxLoadedDocumentBytes: bytes } = this.limits;
    return (count > 0 && this.recent.size > count) || (bytes > 0 && this.totalBytes > bytes);
  }

  /** Past this key's share; `adding` 1 asks whether one more document would pass the count (a load about to start). */
  keyOver(apiKey: string, adding = 0): boolean {
    const { maxLoadedDocumentsPerKey: count, maxLoadedDocumentBytesPerKey: bytes } = this.limits;
    const share = this.keys.get(apiKey);
    if (share === undefined) return count > 0 && adding > count;
    return (count > 0 && share.recent.size + adding > count) || (bytes > 0 && share.bytes > bytes);
  }

  /** Which limit `keyOver(apiKey, adding)` is past, for the refusal's message. */
  keyLimitPassed(apiKey: string, adding: number): string {
    const { maxLoadedDocumentsPerKey: count, maxLoadedDocumentBytesPerKey: bytes } = this.limits;
    if (count > 0 && this.countOf(apiKey) + adding > count) return `${count} loaded documents (MAX_LOADED_DOCUMENTS_PER_KEY)`;
    return `${bytes} bytes of loaded documents (MAX_LOADED_DOCUMENT_BYTES_PER_KEY)`;
  }

  /**
   * The least recently used document that can be unloaded now, overall or among one key's. The ones passed over
   * because they are in use (a connection or a request holds them) are moved to the young end, so the next walk does
   * not pass them again: a budget full of connected documents costs one pass, not one per check.
   */
  private oldest(apiKey: string | undefined): E | undefined {
    const order = apiKey === undefined ? this.recent : this.keys.get(apiKey)?.recent;
    if (order === undefined) return undefined;
    const passed: E[] = [];
    let found: E | undefined;
    for (const entry of order) {
      if (this.host.unloadable(entry)) {
        found = entry;
        break;
      }
      if (this.host.inUse(entry)) passed.push(entry);
    }
    // After the walk: re-inserting into a Set while iterating it would visit the entry again.
    for (const entry of passed) this.touch(entry);
    return found;
  }

  /**
   * Before a request loads one more document of `apiKey`: past the key's share, its own least recently used idle
   * documents go first; when none can go (all held by connections or requests), the request is refused, so one key
   * never evicts the others' documents to make room for its own.
   */
  admit(apiKey: string): void {
    while (this.keyOver(apiKey, 1)) {
      const victim = this.oldest(apiKey);
      if (victim === undefined) {
        limitRefusals.loaded_documents_per_key++;
        throw resourceExhausted(`this API key has reached its limit of ${this.keyLimitPassed(apiKey, 1)}, and every one of them is in use by a connection or a request; retry when one is closed`, 5);
      }
      this.unload(victim);
    }
  }

  /**
   * After a document of `apiKey` was used or grew: unloads the least recently used idle documents, that key's first
   * while it is past its share, then anyone's while the process is past the budget. Documents in use stay (the
   * budget is then passed until they are released; connections have limits of their own).
   */
  enforce(apiKey: string): void {
    while (this.keyOver(apiKey)) {
      const victim = this.oldest(apiKey);
      if (victim === undefined) break;
      this.unload(victim);
    }
    while (this.over()) {
      const victim = this.oldest(undefined);
      if (victim === undefined) break;
      this.unload(victim);
    }
  }

  private unload(victim: E): void {
    budgetCounts.unloadedEarly++;
    this.host.unload(victim);
  }
}
