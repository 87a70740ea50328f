// Owns the document a request names: its body's organizationId + documentId, under the caller's API key.
import type { DocumentKey } from '../../document-key.js';
import type { ApiKeyIdentity } from '../../tenant/workspaces.js';

/** The fields of a request body that name one document of the caller's API key. */
export interface DocumentScope {
  organizationId: string;
  documentId: string;
}

export const refOf = (identity: ApiKeyIdentity, scope: DocumentScope): DocumentKey => ({
  apiKey: identity.apiKey,
  organizationId: scope.organizationId,
  documentId: scope.documentId,
});
