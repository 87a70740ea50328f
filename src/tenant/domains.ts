// Owns each API key's allowed web origins (upstream 1.1 domains): normalising, storing, and the origin check.
import type { Database, Key } from 'lmdb';
import { invalidArgument } from '../errors.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';

/** Most domains one API key may hold; a check walks the list, so it stays small. */
export const MAX_DOMAINS_PER_KEY = 1000;
/** Most domains one add or delete call may carry (upstream 5). */
export const MAX_DOMAINS_PER_CALL = 100;

/**
 * How many API keys' lists `list` keeps. Past it they are all dropped and read again: workspaces are created without
 * credentials, so a cache with no bound grew by an entry for every API key that ever made a sync connection or a
 * cross-origin request (bench/README.md, "In-memory state per tenant"). A bound on memory, not a cache policy.
 */
export const DOMAIN_LISTS_KEPT = 10_000;

/** The list of every key without domains (most of them): one shared array, not an empty one per key. */
const NONE: readonly string[] = Object.freeze([]);

/** `host`, `host:port`, `*.host`, `*.host:port`; hosts are DNS names or IPv4 addresses, lower case. */
const DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:\d{1,5})?$/;

export interface DomainChange {
  /** The key's whole list after the change. */
  readonly domains: string[];
  /** Inputs that changed nothing: already present (add) or absent (delete). */
  readonly skippedDomains: string[];
}

/**
 * Stores domains as upstream does: scheme, `www.`, path and trailing dot removed, lower case. A wildcard entry
 * `*.example.com` admits every subdomain of example.com (not example.com itself). Throws naming the bad entry.
 */
export function normalizeDomain(input: string, field: string): string {
  let text = input.trim().toLowerCase();
  text = text.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  text = text.replace(/[/?#].*$/, '').replace(/\.$/, '');
  if (text.startsWith('www.')) text = text.slice(4);
  if (text.length === 0 || text.length > 253 || !DOMAIN.test(text)) {
    throw invalidArgument(`${field} "${input.slice(0, 100)}" is not a domain (host, host:port or *.host)`);
  }
  const port = /:(\d+)$/.exec(text)?.[1];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) throw invalidArgument(`${field} "${input.slice(0, 100)}" has a port outside 1-65535`);
  return text;
}

/** Does one stored entry admit this origin's host and port? An entry without a port admits any port. */
function admits(entry: string, host: string, port: string): boolean {
  const colon = entry.lastIndexOf(':');
  const entryHost = colon === -1 ? entry : entry.slice(0, colon);
  if (colon !== -1 && entry.slice(colon + 1) !== port) return false;
  if (entryHost.startsWith('*.')) return host.endsWith(entryHost.slice(1));
  return host === entryHost || host === `www.${entryHost}`;
}

export class Domains {
  private readonly db: Database<string[], Key>;
  /** apiKey -> its list; the check runs on every sync upgrade and cross-origin request. */
  private readonly cache = new Map<string, readonly string[]>();

  constructor(private readonly store: Store) {
    this.db = store.records<string[]>(DB.domains);
  }

  /** Cluster mode: another node changed a list; read them again. */
  forgetAll(): void {
    this.cache.clear();
  }

  list(apiKey: string): readonly string[] {
    let domains = this.cache.get(apiKey);
    if (domains === undefined) {
      const stored = this.db.get([apiKey]);
      domains = stored === undefined || stored.length === 0 ? NONE : stored;
      this.keep(apiKey, domains);
    }
    return domains;
  }

  /** API keys whose list is kept now (tests: it stays within DOMAIN_LISTS_KEPT). */
  get keptLists(): number {
    return this.cache.size;
  }

  private keep(apiKey: string, domains: readonly string[]): void {
    if (this.cache.size >= DOMAIN_LISTS_KEPT && !this.cache.has(apiKey)) this.cache.clear();
    this.cache.set(apiKey, domains);
  }

  async add(apiKey: string, inputs: readonly string[]): Promise<DomainChange> {
    const wanted = inputs.map((input, i) => normalizeDomain(input, `data.domains[${i}]`));
    return this.change(apiKey, (current) => {
      const next = [...current];
      const skipped: string[] = [];
      for (const domain of wanted) {
        if (next.includes(domain)) skipped.push(domain);
        else next.push(domain);
      }
      if (next.length > MAX_DOMAINS_PER_KEY) {
        throw invalidArgument(`an API key holds at most ${MAX_DOMAINS_PER_KEY} domains; this one would hold ${next.length}`);
      }
      return [next, skipped];
    });
  }

  async remove(apiKey: string, inputs: readonly string[]): Promise<DomainChange> {
    const unwanted = inputs.map((input, i) => normalizeDomain(input, `data.domains[${i}]`));
    return this.change(apiKey, (current) => {
      const skipped = unwanted.filter((domain) => !current.includes(domain));
      return [current.filter((domain) => !unwanted.includes(domain)), skipped];
    });
  }

  /** Removes every domain of a deleted API key. */
  async forget(apiKey: string): Promise<void> {
    await this.store.transaction(() => this.db.removeSync([apiKey]));
    this.cache.delete(apiKey);
  }

  /**
   * May a page at `origin` use this API key? Yes when the key lists no domains (any origin, as before domains
   * existed), or when an entry admits the origin's host. A request with no Origin header is not from a browser
   * page and is not checked: origins protect users' browsers, they do not authenticate servers.
   */
  allows(apiKey: string, origin: string): boolean {
    return this.policy(apiKey, origin) !== 'refused';
  }

  /**
   * `any`: the key lists no domains (or there is no Origin); `listed`: an entry admits the origin, which the
   * CORS answer then echoes; `refused`: the key lists domains and none admits it.
   */
  policy(apiKey: string, origin: string): 'any' | 'listed' | 'refused' {
    if (origin === '') return 'any';
    const domains = this.list(apiKey);
    if (domains.length === 0) return 'any';
    let url: URL;
    try {
      url = new URL(origin);
    } catch (error) {
      if (error instanceof TypeError) return 'refused';
      throw error;
    }
    const port = url.port !== '' ? url.port : url.protocol === 'https:' || url.protocol === 'wss:' ? '443' : '80';
    return domains.some((entry) => admits(entry, url.hostname, port)) ? 'listed' : 'refused';
  }

  private async change(apiKey: string, edit: (current: readonly string[]) => [string[], string[]]): Promise<DomainChange> {
    let result: DomainChange = { domains: [], skippedDomains: [] };
    // One LMDB transaction per change, so two concurrent adds cannot lose each other's domains.
    await this.store.transaction(() => {
      const [domains, skippedDomains] = edit(this.db.get([apiKey]) ?? []);
      this.db.putSync([apiKey], domains);
      result = { domains, skippedDomains };
    });
    this.keep(apiKey, result.domains.length === 0 ? NONE : result.domains);
    return result;
  }
}
