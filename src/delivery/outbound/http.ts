// Owns every outbound HTTP request Plait makes (webhooks, agents, permission provider): undici, SSRF-guarded, bounded.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Agent, request as undiciRequest } from 'undici';
import { AddressPolicy } from './address-policy.js';

export interface OutboundRequest {
  readonly url: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
  /** Whole exchange, redirects and body included. Default 15 000 ms. */
  readonly timeoutMs?: number;
  /** Largest response body read. Default 1 MiB. */
  readonly maxBytes?: number;
  /** Redirects followed before TOO_MANY_REDIRECTS. Default 3; 0 follows none (a 3xx is then an error). */
  readonly maxRedirects?: number;
  readonly signal?: AbortSignal;
}

export interface OutboundResponse {
  readonly status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** The final URL, after redirects. */
  readonly url: string;
}

export type OutboundErrorCode = 'BLOCKED_ADDRESS' | 'TIMEOUT' | 'TOO_LARGE' | 'NETWORK' | 'TOO_MANY_REDIRECTS' | 'BAD_URL';

export class OutboundError extends Error {
  override readonly name = 'OutboundError';
  constructor(readonly code: OutboundErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** DNS resolution, injectable so tests can map a name to a private address without a DNS server. */
export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface OutboundHttpOptions {
  /** CIDRs (or bare addresses) exempt from the address policy: `OUTBOUND_ALLOWED_NETWORKS`. */
  readonly allowedNetworks: readonly string[];
  /** Default: the system resolver (`dns.lookup`, all addresses). */
  readonly resolve?: Resolver;
  /** Default request timeout; default 15 000 ms. */
  readonly timeoutMs?: number;
  /** Default response cap; default 1 MiB. */
  readonly maxBytes?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;

const systemResolve: Resolver = (hostname) =>
  new Promise((resolvePromise, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolvePromise(addresses)));
  });

/** Raised inside the connector so the request path can tell a refusal from a network failure. */
class BlockedAddress extends Error {
  override readonly name = 'BlockedAddress';
}

function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * One client, one connection pool. The address check runs where the socket is opened (the connector's lookup and
 * IP-literal check), so what is checked is what is connected to: DNS rebinding between a check and a connect cannot
 * slip through. Redirects are followed here, each hop going through the same connector.
 */
export class OutboundHttp {
  private readonly policy: AddressPolicy;
  /**
   * undici and the pool, made at the first request: undici is ~4 MB of heap and a server with no webhook, agent or
   * permission provider configured never sends one (bench/README.md, "Baseline memory").
   */
  private client: Promise<Client> | undefined;
  private closed = false;
  private readonly resolve: Resolver;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;

  constructor(opts: OutboundHttpOptions) {
    this.policy = new AddressPolicy(opts.allowedNetworks);
    this.resolve = opts.resolve ?? systemResolve;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  }

  /** Whether undici has been loaded and the pool made (the first request does it). */
  get started(): boolean {
    return this.client !== undefined;
  }

  private open(): Promise<Client> {
    this.client ??= import('undici').then(({ Agent, buildConnector, request }) => {
      const connector = buildConnector({ lookup: this.guardedLookup });
      const agent = new Agent({
        connect: (options, callback) => {
          const host = stripBrackets(options.hostname);
          if (isIP(host) !== 0) {
            const refusal = this.policy.refusal(host);
            if (refusal !== undefined) {
              callback(new BlockedAddress(refusal), null);
              return;
            }
          }
          connector(options, callback);
        },
        // The overall deadline is the request's signal; these only bound an idle connection.
        headersTimeout: 0,
        bodyTimeout: 0,
        keepAliveTimeout: 4_000,
      });
      return { agent, request };
    });
    return this.client;
  }

  /** Resolves a name and keeps only the addresses the policy allows; none left is a refusal. */
  private readonly guardedLookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (addresses) => {
        const family = typeof options === 'object' && options !== null ? options.family : undefined;
        const candidates = addresses.filter((a) => family === undefined || family === 0 || a.family === family);
        const allowed = candidates.filter((a) => this.policy.refusal(a.address) === undefined);
        if (allowed.length === 0) {
          const first = candidates[0];
          const reason = first === undefined ? `${hostname} has no address` : (this.policy.refusal(first.address) ?? '');
          const error = first === undefined ? Object.assign(new Error(reason), { code: 'ENOTFOUND' }) : new BlockedAddress(`${hostname}: ${reason}`);
          callback(error, '', 4);
          return;
        }
        if (typeof options === 'object' && options !== null && options.all === true) {
          (callback as unknown as (err: null, addresses: LookupAddress[]) => void)(null, allowed);
        } else {
          const chosen = allowed[0];
          callback(null, chosen?.address ?? '', chosen?.family ?? 4);
        }
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), '', 4),
    );
  };

  async request(req: OutboundRequest): Promise<OutboundResponse> {
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    const maxBytes = req.maxBytes ?? this.maxBytes;
    const maxRedirects = req.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal === undefined ? timeout : AbortSignal.any([timeout, req.signal]);
    let url = parseUrl(req.url);
    let method = (req.method ?? 'GET').toUpperCase();
    let body = req.body;
    let headers: Record<string, string> = { ...(req.headers ?? {}) };
    for (let hop = 0; ; hop++) {
      const response = await this.once(url, method, headers, body, signal, timeout, timeoutMs);
      const location = response.headers.location;
      if (!REDIRECTS.has(response.statusCode) || location === undefined) {
        return { status: response.statusCode, headers: flatHeaders(response.headers), body: await readCapped(response.body, maxBytes, timeout, timeoutMs), url: url.href };
      }
      // Discard the redirect's body so the connection goes back to the pool.
      await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      if (hop >= maxRedirects) throw new OutboundError('TOO_MANY_REDIRECTS', `more than ${maxRedirects} redirects from ${req.url}`);
      const next = parseUrl(Array.isArray(location) ? String(location[0]) : location, url);
      if (next.origin !== url.origin) headers = without(headers, CREDENTIAL_HEADERS);
      if (response.statusCode === 303 || ((response.statusCode === 301 || response.statusCode === 302) && method === 'POST')) {
        method = method === 'HEAD' ? 'HEAD' : 'GET';
        body = undefined;
        headers = without(headers, BODY_HEADERS);
      }
      url = next;
    }
  }

  /** Closes pooled connections; in-flight requests finish first. Later requests fail (undici's closed client). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.client === undefined) return;
    const { agent } = await this.client;
    await agent.close();
  }

  private async once(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | Uint8Array | undefined,
    signal: AbortSignal,
    timeout: AbortSignal,
    timeoutMs: number,
  ): Promise<Awaited<ReturnType<typeof undiciRequest>>> {
    const host = stripBrackets(url.hostname);
    if (isIP(host) !== 0) {
      // Early, clearer refusal for literals; the connector checks again at connect time.
      const refusal = this.policy.refusal(host);
      if (refusal !== undefined) throw new OutboundError('BLOCKED_ADDRESS', `refused ${url.href}: ${refusal}`);
    }
    if (this.closed && this.client === undefined) throw new OutboundError('NETWORK', `request to ${url.origin} failed: the outbound client is closed`);
    try {
      const { agent, request } = await this.open();
      return await request(url, { method, headers, body: body ?? null, signal, dispatcher: agent });
    } catch (error) {
      throw toOutboundError(error, url, timeout, timeoutMs);
    }
  }
}

interface Client {
  readonly agent: Agent;
  readonly request: typeof undiciRequest;
}

function parseUrl(raw: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch (error) {
    throw new OutboundError('BAD_URL', `"${raw}" is not a valid URL`, { cause: error });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundError('BAD_URL', `"${raw}" must be an http or https URL`);
  }
  if (url.username !== '' || url.password !== '') throw new OutboundError('BAD_URL', `"${url.origin}" must not carry credentials in the URL`);
  return url;
}

function findBlocked(error: unknown): BlockedAddress | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current instanceof BlockedAddress) return current;
    if (current instanceof AggregateError) {
      const inner = current.errors.find((e) => e instanceof BlockedAddress);
      if (inner instanceof BlockedAddress) return inner;
    }
  }
  return undefined;
}

function toOutboundError(error: unknown, url: URL, timeout: AbortSignal, timeoutMs: number): OutboundError {
  if (error instanceof OutboundError) return error;
  const blocked = findBlocked(error);
  if (blocked !== undefined) return new OutboundError('BLOCKED_ADDRESS', `refused ${url.href}: ${blocked.message}`);
  if (timeout.aborted) return new OutboundError('TIMEOUT', `no complete response from ${url.origin} within ${timeoutMs} ms`, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new OutboundError('NETWORK', `request to ${url.origin} failed: ${message}`, { cause: error });
}

async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(error?: Error): unknown },
  maxBytes: number,
  timeout: AbortSignal,
  timeoutMs: number,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > maxBytes) {
        body.destroy();
        throw new OutboundError('TOO_LARGE', `response body exceeds ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof OutboundError) throw error;
    if (timeout.aborted) throw new OutboundError('TIMEOUT', `response body not complete within ${timeoutMs} ms`, { cause: error });
    throw new OutboundError('NETWORK', `reading the response failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return Buffer.concat(chunks, size);
}

function flatHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** A redirect to another origin must not carry the first origin's credentials (as browsers and curl do). */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'cookie', 'proxy-authorization']);
/** A redirect that turns into GET drops the body and the headers that described it. */
const BODY_HEADERS: ReadonlySet<string> = new Set(['content-type', 'content-length', 'content-encoding']);

function without(headers: Record<string, string>, names: ReadonlySet<string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.has(name.toLowerCase())));
}
