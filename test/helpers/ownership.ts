// Test helper: a document ownership that holds leases as a cluster's do (claimed at load, given up at release), in memory.
import { documentKeyString } from '../../src/document-key.js';
import type { DocumentOwnership } from '../../src/doc/ownership.js';

/** The ownership and the set of document keys (documentKeyString) it holds now. */
export function leaseHoldingOwnership(): { readonly ownership: DocumentOwnership; readonly held: Set<string> } {
  const held = new Set<string>();
  const ownership: DocumentOwnership = {
    owns: (ref) => held.has(documentKeyString(ref)),
    claim: (ref) => (held.add(documentKeyString(ref)), Promise.resolve({ mine: true } as const)),
    release: (ref) => void held.delete(documentKeyString(ref)),
    onLost: () => undefined,
  };
  return { ownership, held };
}
