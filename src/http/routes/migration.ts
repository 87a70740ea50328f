// Owns documents/migrate and its status (upstream 2.14): re-key a document as a background job.
import type { DocumentMigrations, MigrationParams } from '../../doc/migration.js';
import { idString, object } from '../schemas/common.js';
import { ok, operation, type Operation } from '../operation.js';

const migrateSchema = object({ organizationId: idString, documentId: idString, newDocumentId: idString }, ['organizationId', 'documentId', 'newDocumentId']);
const statusSchema = object({ organizationId: idString, migrationId: idString }, ['organizationId', 'migrationId']);

export function migrationOperations(migrations: DocumentMigrations): Operation[] {
  return [
    operation<MigrationParams, 'apiKey'>({
      paths: ['/v2/organizations/documents/migrate'],
      auth: 'apiKey',
      schema: migrateSchema,
      handle: async (input, ctx) => {
        const migrationId = await migrations.start(ctx.identity.apiKey, {
          organizationId: input.organizationId,
          documentId: input.documentId,
          newDocumentId: input.newDocumentId,
        });
        return ok('Document migration started.', { migrationId });
      },
    }),
    operation<{ organizationId: string; migrationId: string }, 'apiKey'>({
      paths: ['/v2/organizations/documents/migrate/status'],
      auth: 'apiKey',
      schema: statusSchema,
      handle: (input, ctx) => ok('Migration status retrieved.', migrations.status(ctx.identity.apiKey, input.migrationId)),
    }),
  ];
}
