// Owns reading a request body from uWebSockets.js: copied chunks, a byte cap enforced while streaming, JSON envelope checks.
import type { HttpResponse } from 'uWebSockets.js';
import { bodyTooLarge, invalidArgument } from '../errors.js';
import { MAX_JSON_DEPTH, tooDeep } from '../limits.js';

/**
 * Collects the body, copying each chunk (uWS reuses the ArrayBuffer after the callback returns).
 * Rejects with 413 as soon as the running total passes `maxBytes`; later chunks are dropped.
 */
export function readBody(res: HttpResponse, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] | undefined;
    let total = 0;
    let failed = false;
    res.onData((chunk, isLast) => {
      if (failed) return;
      total += chunk.byteLength;
      if (total > maxBytes) {
        failed = true;
        reject(bodyTooLarge(maxBytes));
        return;
      }
      // One copy, into Node's buffer pool for small bodies (cheaper than a fresh ArrayBuffer per chunk).
      const copy = Buffer.from(new Uint8Array(chunk));
      // Most bodies arrive in one chunk: no list, no concat.
      if (isLast && chunks === undefined) return resolve(copy);
      (chunks ??= []).push(copy);
      if (isLast) resolve(Buffer.concat(chunks, total));
    });
  });
}

/** Parses the raw body and returns its `data` object, or throws INVALID_ARGUMENT saying what is wrong. */
export function parseEnvelope(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) throw invalidArgument('request body is empty; send {"data": {...}}');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw invalidArgument(`request body is not valid JSON: ${(error as Error).message}`);
  }
  if (!isPlainObject(parsed)) throw invalidArgument('request body must be a JSON object of the form {"data": {...}}');
  if (!('data' in parsed)) throw invalidArgument('request body must be wrapped in a top-level "data" object');
  const data = parsed['data'];
  if (!isPlainObject(data)) throw invalidArgument('data must be an object');
  // Before the schema: deep values overflow the stack of whatever walks them later (Yjs, msgpackr, ajv).
  const deep = tooDeep(data, MAX_JSON_DEPTH);
  if (deep !== undefined) throw invalidArgument(`${shorten(deep)} is nested more than ${MAX_JSON_DEPTH} levels deep`);
  return data;
}

function shorten(path: string): string {
  return path.length <= 120 ? path : `${path.slice(0, 120)}…`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isJsonContentType(contentType: string): boolean {
  if (contentType === 'application/json') return true;
  const mediaType = contentType.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}
