// Owns the rules on what public operations accept: disposable email domains (mailchecker's list) and login-link continue URLs.
import { createRequire } from 'node:module';
import { invalidArgument } from '../errors.js';

/**
 * mailchecker's list, loaded at the first address checked: its module and set are ~4 MB of heap that a server whose
 * workspaces are never created through the public sign-up does not need (issue 18).
 */
let disposable: ReadonlySet<string> | undefined;
function disposableDomains(): ReadonlySet<string> {
  disposable ??= (createRequire(import.meta.url)('mailchecker') as { blacklist(): ReadonlySet<string> }).blacklist();
  return disposable;
}

/** True when the address's domain, or any domain it is a subdomain of, is on mailchecker's disposable list. */
export function isDisposableEmail(email: string): boolean {
  const at = email.lastIndexOf('@');
  let domain = email.slice(at + 1).trim().toLowerCase().replace(/\.$/, '');
  while (domain !== '') {
    if (disposableDomains().has(domain)) return true;
    const dot = domain.indexOf('.');
    if (dot === -1) return false;
    domain = domain.slice(dot + 1);
  }
  return false;
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
