// Owns a worker's outbound fetches: the one SSRF-guarded client (src/delivery/outbound/http.ts) with the run's limits.
import { OutboundError, OutboundHttp, type OutboundRequest, type OutboundResponse } from '../../delivery/outbound/http.js';
import { RunError, type WorkerEnv } from '../tasks.js';

export const DESKTOP_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36 PlaitAgent/1.0';
export const MOBILE_UA = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36 PlaitAgent/1.0';

/** One per worker thread and allow-list (clients keep connection pools, so they are reused across tasks). */
const clients = new Map<string, OutboundHttp>();

export function outboundFor(env: WorkerEnv): OutboundHttp {
  const key = env.allowedNetworks.join(',');
  let client = clients.get(key);
  if (client === undefined) clients.set(key, (client = new OutboundHttp({ allowedNetworks: env.allowedNetworks, timeoutMs: env.fetchTimeoutMs, maxBytes: env.fetchMaxBytes })));
  return client;
}

export class Fetcher {
  private readonly http: OutboundHttp;

  constructor(private readonly env: WorkerEnv) {
    this.http = outboundFor(env);
  }

  /** A fetch that throws RunError with the outbound code (BLOCKED_ADDRESS, TIMEOUT, TOO_LARGE, ...) in its message. */
  async fetch(req: OutboundRequest): Promise<OutboundResponse> {
    try {
      return await this.http.request({ timeoutMs: this.env.fetchTimeoutMs, maxBytes: this.env.fetchMaxBytes, ...req });
    } catch (error) {
      if (error instanceof OutboundError) throw new RunError(error.code, `fetching ${req.url} failed (${error.code}): ${error.message}`);
      throw error;
    }
  }

  /** The page itself: must answer 2xx with HTML or text. */
  async page(url: string, userAgent = DESKTOP_UA): Promise<{ html: string; finalUrl: string }> {
    const response = await this.fetch({ url, headers: { 'user-agent': userAgent, accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5' } });
    if (response.status >= 400) throw new RunError('PAGE_UNAVAILABLE', `${url} answered HTTP ${response.status}`);
    return { html: response.body.toString('utf8'), finalUrl: response.url };
  }

  /** The status of a URL (HEAD, then GET when HEAD is not allowed); an outbound failure becomes `error`. */
  async status(url: string): Promise<{ status?: number; error?: string; code?: string }> {
    try {
      let response = await this.http.request({ url, method: 'HEAD', timeoutMs: this.env.fetchTimeoutMs, headers: { 'user-agent': DESKTOP_UA } });
      if (response.status === 405 || response.status === 501) {
        response = await this.http.request({ url, timeoutMs: this.env.fetchTimeoutMs, maxBytes: 64 * 1024, headers: { 'user-agent': DESKTOP_UA } });
      }
      return { status: response.status };
    } catch (error) {
      // A body over the cap still proves the URL answers.
      if (error instanceof OutboundError && error.code === 'TOO_LARGE') return { status: 200 };
      if (error instanceof OutboundError) return { error: error.message, code: error.code };
      throw error;
    }
  }

  /** A fetch adapter for SDKs that take a custom `fetch` (openai, @anthropic-ai/sdk): every byte still goes through OutboundHttp. */
  asFetch(): typeof fetch {
    return async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const headers: Record<string, string> = {};
      new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).forEach((value, name) => (headers[name] = value));
      // The body is handed to Response as is, which does not decompress: ask for none.
      headers['accept-encoding'] = 'identity';
      const raw = init?.body;
      const body = raw === undefined || raw === null ? undefined : typeof raw === 'string' ? raw : raw instanceof Uint8Array ? raw : new Uint8Array(await new Response(raw).arrayBuffer());
      const response = await this.http.request({
        url,
        method: init?.method ?? 'GET',
        headers,
        ...(body === undefined ? {} : { body }),
        ...(init?.signal ? { signal: init.signal } : {}),
        timeoutMs: Math.max(this.env.fetchTimeoutMs, 60_000),
        maxBytes: Math.max(this.env.fetchMaxBytes, 4 * 1024 * 1024),
        maxRedirects: 0,
      });
      return new Response(response.status === 204 || response.status === 304 ? null : new Uint8Array(response.body), { status: response.status, headers: response.headers });
    };
  }
}
