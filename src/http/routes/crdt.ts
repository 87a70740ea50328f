// Owns the CRDT operations: Get CRDT Data (spec 4.19), Add and Update CRDT Data (upstream notes 2.20).
import type { StoreWrite } from '../../doc/crdt-write.js';
import { dataMismatch } from '../../doc/crdt.js';
import type { StoreType } from '../../store/snapshots.js';
import type { DocumentActors } from '../../doc/registry.js';
import { invalidArgument } from '../../errors.js';
import { ok, operation, type Operation } from '../operation.js';
import { refOf } from './document-scope.js';
import { getCrdtSchema, writeCrdtSchema } from '../schemas/crdt.js';

interface GetCrdtInput {
  organizationId: string;
  documentId: string;
  editorId?: string;
}

interface WriteCrdtInput {
  organizationId: string;
  documentId: string;
  editorId: string;
  type: StoreType;
  data: unknown;
  contentKey?: string;
}

function storeWrite(input: WriteCrdtInput): StoreWrite {
  const mismatch = dataMismatch(input.type, input.data);
  if (mismatch !== undefined) throw invalidArgument(mismatch);
  return { type: input.type, data: input.data, ...(input.contentKey === undefined ? {} : { contentKey: input.contentKey }) };
}

export function crdtOperations(documentActors: DocumentActors): Operation[] {
  return [
    operation<GetCrdtInput, 'apiKey'>({
      paths: ['/v2/crdt/get'],
      auth: 'apiKey',
      schema: getCrdtSchema,
      handle: async (input, ctx) => {
        const records = await documentActors.use(refOf(ctx.identity, input), (actor) => actor.records(input.editorId));
        return ok('CRDT data retrieved successfully.', records);
      },
    }),
    operation<WriteCrdtInput, 'apiKey'>({
      paths: ['/v2/crdt/add'],
      auth: 'apiKey',
      schema: writeCrdtSchema,
      handle: async (input, ctx) => {
        const write = storeWrite(input);
        await documentActors.use(refOf(ctx.identity, input), (actor) => actor.add(input.editorId, write));
        return ok('CRDT data added successfully.');
      },
    }),
    operation<WriteCrdtInput, 'apiKey'>({
      paths: ['/v2/crdt/update'],
      auth: 'apiKey',
      schema: writeCrdtSchema,
      handle: async (input, ctx) => {
        const write = storeWrite(input);
        await documentActors.use(refOf(ctx.identity, input), (actor) => actor.update(input.editorId, write));
        return ok('CRDT data updated successfully.');
      },
    }),
  ];
}
