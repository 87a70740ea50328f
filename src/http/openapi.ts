// Owns the OpenAPI 3.1 description of the REST surface, built from the registered operations and their ajv schemas.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CANONICAL, type CanonicalStatus } from '../errors.js';
import type { AuthLevel, Operation } from './operation.js';

export interface OpenApiInfo {
  readonly title: string;
  readonly version: string;
  readonly description?: string;
}

type Json = Record<string, unknown>;

/** camelCase id of a path: `/v2/organizations/documents/add` → `organizationsDocumentsAdd`; v1 aliases get a `v1` prefix. */
export function operationIdOf(path: string): string {
  const [, version = '', ...segments] = path.split('/');
  const words = segments.flatMap((segment) => segment.split(/[-_]/)).filter((word) => word !== '');
  const camel = words.map((word, i) => (i === 0 ? word : word[0]?.toUpperCase() + word.slice(1))).join('');
  return version === 'v2' ? camel : `${version}${camel[0]?.toUpperCase() ?? ''}${camel.slice(1)}`;
}

/** The first path segment after the version (`organizations`, `workspace`, …): the tag the reference groups by. */
export function tagOf(path: string): string {
  return path.split('/')[2] ?? 'other';
}

const SECURITY: Record<AuthLevel, Json[]> = {
  public: [],
  apiKey: [{ apiKey: [], authToken: [] }],
  workspace: [{ workspaceId: [], workspaceAuthToken: [] }],
};

/**
 * Error answers every operation can give, by HTTP status, with the canonical statuses behind each. Which of them a
 * given operation gives depends on its input and state; the envelope is always the same.
 */
export const ERROR_ANSWERS: Readonly<Record<string, { readonly description: string; readonly statuses: readonly CanonicalStatus[] }>> = {
  '400': { description: 'The input is invalid (the message names the field), or the state does not allow the change.', statuses: ['INVALID_ARGUMENT', 'FAILED_PRECONDITION'] },
  '401': { description: 'A credential is malformed or expired.', statuses: ['UNAUTHENTICATED'] },
  '403': { description: 'A credential header is missing or wrong, or the caller may not do this.', statuses: ['PERMISSION_DENIED'] },
  '404': { description: 'Something the request names does not exist.', statuses: ['NOT_FOUND'] },
  '409': { description: 'It exists already, or a concurrent change won.', statuses: ['ALREADY_EXISTS', 'ABORTED'] },
  '413': { description: 'The body is larger than MAX_BODY_BYTES.', statuses: ['INVALID_ARGUMENT'] },
  '415': { description: 'The content type is not JSON.', statuses: ['INVALID_ARGUMENT'] },
  '429': { description: 'A limit was reached (rate limit, full mailbox, the API key\'s loaded documents); `Retry-After` says when to retry.', statuses: ['RESOURCE_EXHAUSTED'] },
  '500': { description: 'An internal error; nothing about it is leaked.', statuses: ['INTERNAL'] },
  '503': { description: 'The server is stopping; retry shortly.', statuses: ['UNAVAILABLE'] },
};

function errorResponses(): Json {
  const responses: Json = {};
  for (const code of Object.keys(ERROR_ANSWERS)) responses[code] = { $ref: `#/components/responses/Error${code}` };
  return responses;
}

function components(): Json {
  const responses: Json = {};
  for (const [code, answer] of Object.entries(ERROR_ANSWERS)) {
    responses[`Error${code}`] = {
      description: `${answer.description} Canonical status: ${answer.statuses.join(' or ')}.`,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
      ...(code === '429' ? { headers: { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } } } : {}),
    };
  }
  return {
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'x-svc-api-key', description: 'The API key (with x-svc-auth-token).' },
      authToken: { type: 'apiKey', in: 'header', name: 'x-svc-auth-token', description: 'An auth token of the API key.' },
      workspaceId: { type: 'apiKey', in: 'header', name: 'x-svc-workspace-id', description: 'The workspace id (with x-svc-workspace-auth-token).' },
      workspaceAuthToken: { type: 'apiKey', in: 'header', name: 'x-svc-workspace-auth-token', description: 'The workspace auth token.' },
    },
    schemas: {
      SuccessEnvelope: {
        type: 'object',
        required: ['result'],
        properties: {
          result: {
            type: 'object',
            required: ['status', 'message', 'data'],
            properties: { status: { const: 'success' }, message: { type: 'string' }, data: {} },
          },
        },
      },
      ErrorEnvelope: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['status', 'message'],
            properties: {
              status: { type: 'string', enum: Object.keys(CANONICAL) },
              message: { type: 'string', description: 'What is wrong; names the field for invalid input.' },
              details: { description: 'Per-item results or other structured detail, when there is any.' },
            },
          },
        },
      },
    },
    responses,
  };
}

/** The OpenAPI 3.1 document of `operations`: one POST per path, its request body the `{data}` envelope around the schema the server compiles. */
export function buildOpenApi(operations: readonly Operation[], info: OpenApiInfo): Json {
  const paths: Json = {};
  const tags = new Set<string>();
  for (const op of operations) {
    // The v2 path is the one to call; v1 paths are aliases kept for older clients.
    const primary = op.paths.find((path) => path.startsWith('/v2/')) ?? op.paths[0];
    for (const path of op.paths) {
      const tag = tagOf(path);
      tags.add(tag);
      paths[path] = {
        post: {
          operationId: operationIdOf(path),
          tags: [tag],
          summary: path === primary ? path : `${path} (alias of ${primary ?? path})`,
          description: `Auth: ${op.auth === 'apiKey' ? 'API key and auth token' : op.auth}.${op.rateLimited ? ' Rate limited per client address.' : ''}`,
          security: SECURITY[op.auth],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: { type: 'object', required: ['data'], properties: { data: op.schema } },
              },
            },
          },
          responses: {
            '200': { description: 'Success.', content: { 'application/json': { schema: { $ref: '#/components/schemas/SuccessEnvelope' } } } },
            ...errorResponses(),
          },
        },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, ...(info.description === undefined ? {} : { description: info.description }) },
    servers: [{ url: '/' }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: components(),
  };
}

/** Plait's version from its package.json (two levels up from src/http, three from dist/src/http). */
export function plaitVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++, dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'plait' && typeof pkg.version === 'string') return pkg.version;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return '0.0.0';
}
