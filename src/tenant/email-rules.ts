// Owns the rules on what public operations accept: disposable email domains (mailchecker's list) and login-link continue URLs.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { invalidArgument } from '../errors.js';

/**
 * mailchecker's list, read from its file at each check and not kept. Its module builds a Set of ~55k domains, ~5 MB
 * of heap (and ~1 MB of source) that a server then held for good after its first sign-up, for an operation that is
 * rare and rate limited (bench/README.md, "Baseline memory"). Reading the file (~1 MB from the page cache) and
 * searching its array literal costs about a millisecond a check. Should a mailchecker release change the file's
 * shape, the check falls back to the package's own Set (the test of this file notices either way).
 */
function listedDomain(domains: readonly string[]): boolean {
  const require = createRequire(import.meta.url);
  const text = readFileSync(require.resolve('mailchecker'), 'latin1');
  const start = text.indexOf(LIST_OPEN);
  const end = start === -1 ? -1 : text.indexOf(LIST_CLOSE, start);
  if (end === -1) {
    const set = (require('mailchecker') as { blacklist(): ReadonlySet<string> }).blacklist();
    return domains.some((domain) => set.has(domain));
  }
  const list = text.slice(start + LIST_OPEN.length - 1, end + 1);
  return domains.some((domain) => list.includes(`,${JSON.stringify(domain)},`) || list.includes(`[${JSON.stringify(domain)},`) || list.includes(`,${JSON.stringify(domain)}]`));
}
const LIST_OPEN = 'new Set([';
const LIST_CLOSE = ']);';

/** The domain of `email` and every domain it is a subdomain of, lower case: `a.b.example.com` → … `example.com`, `com`. */
function domainChain(email: string): string[] {
  const at = email.lastIndexOf('@');
  let domain = email.slice(at + 1).trim().toLowerCase().replace(/\.$/, '');
  const chain: string[] = [];
  while (domain !== '') {
    chain.push(domain);
    const dot = domain.indexOf('.');
    if (dot === -1) break;
    domain = domain.slice(dot + 1);
  }
  return chain;
}

/** True when the address's domain, or any domain it is a subdomain of, is on mailchecker's disposable list. */
export function isDisposableEmail(email: string): boolean {
  const chain = domainChain(email);
  return chain.length > 0 && listedDomain(chain);
}

/** Throws INVALID_ARGUMENT naming `field` when the address is on a disposable domain. */
export function refuseDisposable(email: string, field: string): void {
  if (isDisposableEmail(email)) throw invalidArgument(`${field}: this email domain is not supported (disposable email addresses are refused)`);
}

/** Hosts that are this machine, accepted as continue URLs for a console run locally. */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Checks a login link's `continueUrl`: an absolute http(s) URL without user info whose origin is one of
 * `consoleOrigins` (scheme, host and port equal) or whose host is exactly `localhost` (or a loopback literal), any
 * port. Comparison is on the parsed URL, so look-alikes (`localhost.evil.example`, `evil.example/localhost`,
 * `localhost@evil.example`) fail. Returns the normalized URL.
 */
export function checkContinueUrl(raw: string, consoleOrigins: readonly string[], field = 'data.continueUrl'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidArgument(`${field} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidArgument(`${field} must be an http(s) URL, got ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw invalidArgument(`${field} must not carry user info`);
  if (LOCAL_HOSTS.has(url.hostname) || consoleOrigins.includes(url.origin)) return url.href;
  const allowed = [...consoleOrigins, 'localhost'].join(', ');
  throw invalidArgument(`${field}: the domain ${url.hostname} is not allowed; continue URLs must be on ${allowed}`);
}
