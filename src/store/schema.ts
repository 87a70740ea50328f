// Owns the data directory's schema stamp: which stamps this build reads, restamping a readable directory, and whether the stamp is there.
import type { Database, Key } from 'lmdb';
import { READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION } from './keys.js';

/** The stamp's key in DB.meta. */
const STAMP_KEY = 'schemaVersion';

/** What a directory's stamp said when it was opened. */
export type StampReading = { readonly found: number | undefined } | { readonly refused: string };

/**
 * Reads the stamp in DB.meta (`meta`) of the directory at `path`. A fresh directory (no stamp) or one of a version
 * this build reads is stamped with this build's version; `found` is what it held (undefined: fresh). Any other stamp
 * is refused, with the message to show.
 */
export function stampSchema(meta: Database<unknown, Key>, path: string): StampReading {
  const stamped = meta.get(STAMP_KEY);
  const found = typeof stamped === 'number' ? stamped : undefined;
  if (stamped === undefined || (found !== undefined && READABLE_SCHEMA_VERSIONS.includes(found))) {
    meta.putSync(STAMP_KEY, SCHEMA_VERSION);
    return { found };
  }
  if (stamped === SCHEMA_VERSION) return { found };
  return {
    refused:
      `data directory ${path} has schema version ${String(stamped)}, this server reads version ${SCHEMA_VERSION}; ` +
      'use a matching server version or a fresh DATA_DIR',
  };
}

/** The stamp as stored, without stamping (a backup's read of a directory opened read-only); undefined: none. */
export function readStamp(meta: Pick<Database<unknown, Key>, 'get'>): number | undefined {
  const stamped = meta.get(STAMP_KEY);
  return typeof stamped === 'number' ? stamped : undefined;
}

/** Whether the directory holds this build's stamp (a health check's read). */
export function stampPresent(meta: Database<unknown, Key>): boolean {
  return meta.get(STAMP_KEY) === SCHEMA_VERSION;
}
