// Owns the shape of a REST operation: its paths, auth level, data schema and handler; handlers never touch `res`.
import type { Logger } from '../log.js';
import type { ApiKeyIdentity, WorkspaceIdentity } from '../tenant/workspaces.js';

export type AuthLevel = 'public' | 'workspace' | 'apiKey';

export type IdentityOf<L extends AuthLevel> = L extends 'apiKey'
  ? ApiKeyIdentity
  : L extends 'workspace'
    ? WorkspaceIdentity
    : null;

export interface RequestContext<L extends AuthLevel = AuthLevel> {
  readonly requestId: string;
  readonly ip: string;
  readonly log: Logger;
  readonly identity: IdentityOf<L>;
}

/** What a handler returns: the envelope's message and data, plus siblings of `data` (pageToken) or a bare `result`. */
export type Reply =
  | { readonly kind: 'envelope'; readonly message: string; readonly data: unknown; readonly extra?: Readonly<Record<string, unknown>> }
  | { readonly kind: 'bare'; readonly result: unknown }
  | { readonly kind: 'raw'; readonly httpStatus: number; readonly body: unknown };

export const ok = (message: string, data: unknown = null, extra?: Readonly<Record<string, unknown>>): Reply =>
  extra === undefined ? { kind: 'envelope', message, data } : { kind: 'envelope', message, data, extra };

/** A body outside the envelope with its own HTTP status: GDPR delete answers 202 with a top-level body (upstream 0). */
export const raw = (httpStatus: number, body: unknown): Reply => ({ kind: 'raw', httpStatus, body });

/** List Alerts answers `result` as a bare array (spec 4.0.3). */
export const bare = (result: unknown): Reply => ({ kind: 'bare', result });

export interface Operation {
  readonly paths: readonly string[];
  readonly auth: AuthLevel;
  /** JSON schema of `data`, compiled once, at the first request on the operation (test/http/schemas.test.ts compiles them all). */
  readonly schema: object;
  /** Public operations are rate limited per client address. */
  readonly rateLimited: boolean;
  /** Operations about an email address are also rate limited per address, by the named limiter. */
  readonly targetEmail?: TargetEmail<unknown>;
  readonly handle: (input: unknown, ctx: RequestContext) => Promise<Reply> | Reply;
}

export interface TargetEmail<I> {
  readonly limiter: 'emailSend' | 'emailStatus';
  readonly of: (input: I) => string;
}

export interface OperationSpec<I, L extends AuthLevel> {
  readonly paths: readonly string[];
  readonly auth: L;
  readonly schema: object;
  readonly rateLimited?: boolean;
  readonly targetEmail?: TargetEmail<I>;
  readonly handle: (input: I, ctx: RequestContext<L>) => Promise<Reply> | Reply;
}

/**
 * Declares an operation. The route wrapper validates `data` against `schema` before calling `handle`,
 * so `I` is the schema's type, and authenticates to level `L` first, so the identity is typed.
 */
export function operation<I, L extends AuthLevel>(spec: OperationSpec<I, L>): Operation {
  return {
    paths: spec.paths,
    auth: spec.auth,
    schema: spec.schema,
    rateLimited: spec.rateLimited ?? spec.auth === 'public',
    ...(spec.targetEmail === undefined ? {} : { targetEmail: spec.targetEmail as unknown as TargetEmail<unknown> }),
    handle: spec.handle as unknown as Operation['handle'],
  };
}
