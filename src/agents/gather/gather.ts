// Owns context gathering (spec 4.20 `contextGathering`): each strategy's fetch and extraction, bounded in time and size.
import type { ContextStrategy, RestApiOptions } from '../model.js';
import { RunError, type WorkerEnv } from '../tasks.js';
import { browserContext, BROWSER_STRATEGIES } from './browser.js';
import { DESKTOP_UA, Fetcher, MOBILE_UA } from './fetcher.js';
import { parsePage, type PageFacts } from './html.js';

/** Characters of gathered text kept per strategy (what a model gets to read). */
export const TEXT_CAP = 60_000;
const SITEMAP_URL_CAP = 500;
const STYLESHEET_CAP = 5;

export interface GatheredContext {
  readonly url: string;
  /** The parsed page, when a page strategy fetched it. */
  readonly page?: PageFacts;
  /** Strategy name -> what it gathered, as plain data for the model and the execution record. */
  readonly parts: Readonly<Record<string, unknown>>;
}

const cap = (text: string, limit = TEXT_CAP): string => (text.length <= limit ? text : `${text.slice(0, limit)}\n[truncated at ${limit} characters]`);

export interface GatherOptions {
  readonly strategies: readonly ContextStrategy[];
  readonly strategyOptions?: Readonly<Record<string, unknown>>;
}

/** Runs every strategy in order; the first failure fails the run (a run with half its context would mislead). */
export async function gatherContext(env: WorkerEnv, url: string, options: GatherOptions): Promise<GatheredContext> {
  const fetcher = new Fetcher(env);
  const pages = new Map<string, Promise<{ html: string; facts: PageFacts }>>();
  const pageFor = (userAgent: string): Promise<{ html: string; facts: PageFacts }> => {
    let loaded = pages.get(userAgent);
    if (loaded === undefined) {
      loaded = fetcher.page(url, userAgent).then(({ html, finalUrl }) => ({ html, facts: parsePage(html, finalUrl) }));
      pages.set(userAgent, loaded);
    }
    return loaded;
  };
  const parts: Record<string, unknown> = {};
  let page: PageFacts | undefined;
  for (const strategy of options.strategies) {
    if (BROWSER_STRATEGIES.has(strategy)) {
      parts[strategy] = await browserContext(env, strategy, url);
      continue;
    }
    switch (strategy) {
      case 'none':
        break;
      case 'web-page-text': {
        const deviceType = (options.strategyOptions?.['web-page-text'] as { deviceType?: string } | undefined)?.deviceType ?? 'desktop';
        const { facts } = await pageFor(deviceType === 'mobile' ? MOBILE_UA : DESKTOP_UA);
        page ??= facts;
        parts[strategy] = { deviceType, title: facts.title, text: cap(facts.text) };
        break;
      }
      case 'web-page-html': {
        const { html, facts } = await pageFor(DESKTOP_UA);
        page ??= facts;
        parts[strategy] = { html: cap(html) };
        break;
      }
      case 'web-page-links': {
        const { facts } = await pageFor(DESKTOP_UA);
        page ??= facts;
        parts[strategy] = { links: facts.links.slice(0, 500) };
        break;
      }
      case 'web-page-css': {
        const { facts } = await pageFor(DESKTOP_UA);
        page ??= facts;
        const sheets: Array<{ url: string; css: string }> = [];
        for (const sheet of facts.stylesheets.slice(0, STYLESHEET_CAP)) {
          const response = await fetcher.fetch({ url: sheet, headers: { 'user-agent': DESKTOP_UA } });
          if (response.status < 400) sheets.push({ url: sheet, css: cap(response.body.toString('utf8'), 20_000) });
        }
        parts[strategy] = { inline: facts.inlineCss.map((css) => cap(css, 20_000)), stylesheets: sheets };
        break;
      }
      case 'web-page-accessibility': {
        const { facts } = await pageFor(DESKTOP_UA);
        page ??= facts;
        parts[strategy] = { lang: facts.lang, title: facts.title, headings: facts.headings, images: facts.images.slice(0, 500), unnamedControls: facts.unnamedControls };
        break;
      }
      case 'robots-txt': {
        const response = await fetcher.fetch({ url: new URL('/robots.txt', url).href, maxBytes: 512 * 1024 });
        parts[strategy] = { status: response.status, text: response.status < 400 ? cap(response.body.toString('utf8'), 20_000) : '' };
        break;
      }
      case 'sitemap-data': {
        const response = await fetcher.fetch({ url: new URL('/sitemap.xml', url).href });
        const xml = response.status < 400 ? response.body.toString('utf8') : '';
        const urls = [...xml.matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/g)].map((m) => m[1] ?? '').slice(0, SITEMAP_URL_CAP);
        parts[strategy] = { status: response.status, urls };
        break;
      }
      case 'rest-api':
        parts[strategy] = await restApi(fetcher, options.strategyOptions?.['rest-api'] as RestApiOptions | undefined);
        break;
      default:
        throw new RunError('INVALID_ARGUMENT', `unknown context strategy ${String(strategy)}`);
    }
  }
  return page === undefined ? { url, parts } : { url, page, parts };
}

/** `rest-api`: one request with the agent's (opened) credentials; the answer is context, never logged. */
async function restApi(fetcher: Fetcher, options: RestApiOptions | undefined): Promise<unknown> {
  if (options === undefined) throw new RunError('INVALID_ARGUMENT', "contextGathering.strategyOptions['rest-api'] is missing");
  const headers: Record<string, string> = { accept: 'application/json', ...(options.headers ?? {}) };
  const auth = options.auth as { type?: string; token?: string; username?: string; password?: string; name?: string; value?: string } | undefined;
  if (auth?.type === 'bearer' && auth.token !== undefined) headers['authorization'] = `Bearer ${auth.token}`;
  else if (auth?.type === 'basic' && auth.username !== undefined) headers['authorization'] = `Basic ${Buffer.from(`${auth.username}:${auth.password ?? ''}`).toString('base64')}`;
  else if (auth?.type === 'header' && auth.name !== undefined && auth.value !== undefined) headers[auth.name.toLowerCase()] = auth.value;
  const response = await fetcher.fetch({ url: options.url, method: options.method ?? 'GET', headers, ...(options.body === undefined ? {} : { body: options.body }) });
  const text = response.body.toString('utf8');
  let body: unknown = cap(text, 20_000);
  if ((response.headers['content-type'] ?? '').includes('json')) {
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new RunError('REST_API_INVALID', `rest-api ${options.url} answered content-type JSON that does not parse: ${(error as Error).message}`);
    }
  }
  return { status: response.status, body };
}
