// Owns the domain operations: add, delete and list an API key's allowed web origins (v1 and v2 share them).
import type { Domains } from '../../tenant/domains.js';
import { ok, operation, type Operation } from '../operation.js';
import { emptyData } from '../schemas/common.js';
import { changeDomainsSchema } from '../schemas/domains.js';

export function domainOperations(domains: Domains): Operation[] {
  return [
    operation<{ domains: string[] }, 'apiKey'>({
      paths: ['/v2/workspace/domains/add', '/v1/workspace/domains/add'],
      auth: 'apiKey',
      schema: changeDomainsSchema,
      handle: async (input, ctx) => ok('Domains added successfully.', await domains.add(ctx.identity.apiKey, input.domains)),
    }),
    operation<{ domains: string[] }, 'apiKey'>({
      paths: ['/v2/workspace/domains/delete', '/v1/workspace/domains/delete'],
      auth: 'apiKey',
      schema: changeDomainsSchema,
      handle: async (input, ctx) => ok('Domains deleted successfully.', await domains.remove(ctx.identity.apiKey, input.domains)),
    }),
    operation<Record<string, never>, 'apiKey'>({
      paths: ['/v2/workspace/domains/get'],
      auth: 'apiKey',
      schema: emptyData,
      handle: (_input, ctx) => ok('Domains retrieved successfully.', { domains: [...domains.list(ctx.identity.apiKey)] }),
    }),
  ];
}
