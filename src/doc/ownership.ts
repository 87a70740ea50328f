// Owns the scale-out port: whether this process owns a document, asked by DocumentActors before it loads one.
import type { DocumentKey } from '../document-key.js';
import { AppError } from '../errors.js';

export type Ownership = { readonly mine: true } | { readonly mine: false; readonly owner: string };

/**
 * Who owns each document. One process owns everything (`SINGLE_PROCESS`); in a cluster, src/cluster/ implements it
 * with leases in NATS JetStream, and server.ts hands that to DocumentActors. The core never imports the cluster.
 */
export interface DocumentOwnership {
  /** Whether this process may serve `key` now, without waiting (it holds a valid lease). */
  owns(key: DocumentKey): boolean;
  /** Takes ownership when free (or lapsed), else names the owner. */
  claim(key: DocumentKey): Promise<Ownership>;
  /** The document was unloaded here: give ownership up so the next process that needs it takes it at once. */
  release(key: DocumentKey): void;
  /** Told when ownership was lost (a lease could not be renewed): the document must stop being served here. */
  onLost(listener: (key: DocumentKey) => void): void;
}

export const SINGLE_PROCESS: DocumentOwnership = Object.freeze({
  owns: () => true,
  claim: () => Promise.resolve({ mine: true } as const),
  release: () => undefined,
  onLost: () => undefined,
});

/** Another process owns the document: UNAVAILABLE to a caller that cannot be relayed, with the owner for one that can. */
export class NotOwnerError extends AppError {
  constructor(readonly owner: string) {
    super('UNAVAILABLE', 'this document is served by another node; retry shortly', { retryAfterSeconds: 1 });
  }
}

/**
 * Claims every document not owned yet; one owned by another node answers NotOwnerError (a background job then runs on
 * that node, src/tenant/jobs.ts). Work that needs every document's lease (a migration) asks this first.
 */
export async function claimAll(ownership: DocumentOwnership, keys: readonly DocumentKey[]): Promise<void> {
  for (const key of keys) {
    if (ownership.owns(key)) continue;
    const claim = await ownership.claim(key);
    if (!claim.mine) throw new NotOwnerError(claim.owner);
  }
}
