// Owns the identity of a document, (API key, organization, document), and the one string built from it.

/** (API key, organization, document): one document actor, one directory document, one set of stored rows. */
export interface DocumentKey {
  readonly apiKey: string;
  readonly organizationId: string;
  readonly documentId: string;
}

/** The key as one string (map keys, topic names); with `editorId`, one editor doc of the document. */
export const documentKeyString = (key: DocumentKey, editorId?: string): string =>
  JSON.stringify(editorId === undefined ? [key.apiKey, key.organizationId, key.documentId] : [key.apiKey, key.organizationId, key.documentId, editorId]);
