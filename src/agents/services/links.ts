// Owns the link services: `broken-links` (every link and image of the page) and `crawler` (same-origin pages, breadth first).
import { Fetcher, DESKTOP_UA } from '../gather/fetcher.js';
import { parsePage, type PageLink } from '../gather/html.js';
import type { Finding, WorkerEnv } from '../tasks.js';

const MAX_LINKS = 200;
const CONCURRENCY = 4;

/** Runs `work` over `items` with at most `limit` at a time, keeping order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await work(items[index] as T);
    }
  });
  await Promise.all(lanes);
  return out;
}

/** How many times `text` appeared among the links before this one: the anchor's occurrence (1-based). */
function occurrences(links: readonly PageLink[]): number[] {
  const seen = new Map<string, number>();
  return links.map((link) => {
    const count = (seen.get(link.text) ?? 0) + 1;
    seen.set(link.text, count);
    return count;
  });
}

export async function brokenLinks(env: WorkerEnv, url: string, links: readonly PageLink[]): Promise<{ findings: Finding[]; checked: number; skipped: number }> {
  const fetcher = new Fetcher(env);
  const checkable = links.filter((l) => l.kind === 'a' || l.kind === 'img').slice(0, MAX_LINKS);
  const occurrence = occurrences(checkable);
  const unique = [...new Set(checkable.map((l) => l.href))];
  const statuses = new Map(await mapLimited(unique, CONCURRENCY, async (href) => [href, await fetcher.status(href)] as const));
  const findings: Finding[] = [];
  let skipped = 0;
  checkable.forEach((link, index) => {
    const status = statuses.get(link.href);
    if (status === undefined) return;
    // A link to an address the server may not reach is not checked; reporting it broken would be a guess.
    if (status.code === 'BLOCKED_ADDRESS') {
      skipped++;
      return;
    }
    const broken = status.status === undefined || status.status >= 400;
    if (!broken) return;
    const what = link.kind === 'img' ? 'Broken image' : 'Broken link';
    const reason = status.status === undefined ? `could not be reached (${status.code ?? 'error'})` : `answered HTTP ${status.status}`;
    findings.push({
      title: `${what}: ${link.href}`,
      description: `${link.kind === 'img' ? 'The image' : 'The link'} ${link.href} ${reason}.`,
      severity: status.status === 404 || status.status === 410 || status.status === undefined ? 'high' : 'medium',
      issueType: link.kind === 'img' ? 'broken-image' : 'broken-link',
      sourceUrl: url,
      ...(link.text === '' ? {} : { targetText: link.text, occurrence: occurrence[index] ?? 1 }),
      detail: { href: link.href, status: status.status ?? null, error: status.code ?? null },
    });
  });
  return { findings, checked: unique.length, skipped };
}

export interface CrawlOptions {
  readonly maxPages?: number;
  readonly maxDepth?: number;
}

/** Breadth-first over same-origin links; reports pages that fail, and pages without a title. */
export async function crawl(env: WorkerEnv, url: string, options: CrawlOptions = {}): Promise<{ findings: Finding[]; pages: number }> {
  const fetcher = new Fetcher(env);
  const maxPages = Math.min(Math.max(options.maxPages ?? 20, 1), 200);
  const maxDepth = Math.min(Math.max(options.maxDepth ?? 2, 0), 5);
  const origin = new URL(url).origin;
  const seen = new Set([url]);
  let frontier: Array<{ url: string; from: string; text: string }> = [{ url, from: url, text: '' }];
  const findings: Finding[] = [];
  let pages = 0;
  for (let depth = 0; depth <= maxDepth && frontier.length > 0; depth++) {
    const next: typeof frontier = [];
    for (const item of frontier) {
      if (pages >= maxPages) break;
      pages++;
      let response;
      try {
        response = await fetcher.fetch({ url: item.url, headers: { 'user-agent': DESKTOP_UA } });
      } catch (error) {
        findings.push({ title: `Unreachable page: ${item.url}`, description: `${item.url} (linked from ${item.from}) could not be fetched: ${(error as Error).message}`, severity: 'high', issueType: 'crawl-error', sourceUrl: item.from, ...(item.text === '' ? {} : { targetText: item.text }), detail: { href: item.url } });
        continue;
      }
      if (response.status >= 400) {
        findings.push({ title: `Page answers HTTP ${response.status}: ${item.url}`, description: `${item.url} (linked from ${item.from}) answered HTTP ${response.status}.`, severity: 'high', issueType: 'crawl-error', sourceUrl: item.from, ...(item.text === '' ? {} : { targetText: item.text }), detail: { href: item.url, status: response.status } });
        continue;
      }
      if (!(response.headers['content-type'] ?? 'text/html').includes('html')) continue;
      const facts = parsePage(response.body.toString('utf8'), response.url);
      if (facts.title === '') findings.push({ title: `Page without a title: ${item.url}`, description: `${item.url} has no <title>.`, severity: 'low', issueType: 'missing-title', sourceUrl: item.url, detail: { href: item.url } });
      for (const link of facts.links) {
        if (link.kind !== 'a') continue;
        const target = new URL(link.href);
        target.hash = '';
        if (target.origin !== origin || seen.has(target.href)) continue;
        seen.add(target.href);
        next.push({ url: target.href, from: item.url, text: link.text });
      }
    }
    frontier = next;
  }
  return { findings, pages };
}
