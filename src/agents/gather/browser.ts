// Owns the strategies that need a real browser (screenshot, computed styles, site audit): playwright-core on a local Chromium.
import { existsSync } from 'node:fs';
import type { ContextStrategy } from '../model.js';
import { RunError, type WorkerEnv } from '../tasks.js';
import { DESKTOP_UA, Fetcher } from './fetcher.js';

export const BROWSER_STRATEGIES: ReadonlySet<ContextStrategy> = new Set(['web-page-screenshot', 'computed-styles', 'site-audit']);

const SCREENSHOT_CAP = 2 * 1024 * 1024;

export function requireChromium(env: WorkerEnv, what: string): string {
  if (env.chromiumPath === undefined || !existsSync(env.chromiumPath)) {
    throw new RunError('FAILED_PRECONDITION', `${what} needs Chromium, which is not installed on this server (set CHROMIUM_PATH to a Chromium binary)`);
  }
  return env.chromiumPath;
}

/**
 * Opens `url` in headless Chromium with every request the page makes answered through the SSRF-guarded client
 * (`page.route`), so the browser never opens a connection of its own, then runs `use` on the page.
 */
export async function withPage<T>(env: WorkerEnv, what: string, url: string, use: (page: import('playwright-core').Page) => Promise<T>): Promise<T> {
  const executablePath = requireChromium(env, what);
  const { chromium } = await import('playwright-core');
  const fetcher = new Fetcher(env);
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const context = await browser.newContext({ userAgent: DESKTOP_UA, viewport: { width: 1280, height: 800 } });
    await context.route('**/*', async (route) => {
      const request = route.request();
      if (!/^https?:/.test(request.url())) return route.continue();
      try {
        const body = request.postDataBuffer();
        const response = await fetcher.fetch({ url: request.url(), method: request.method(), headers: request.headers(), ...(body === null ? {} : { body }) });
        return await route.fulfill({ status: response.status, headers: response.headers, body: response.body });
      } catch (error) {
        // A refused or failed subrequest fails in the page, as a network error would.
        return route.abort(error instanceof RunError && error.code === 'BLOCKED_ADDRESS' ? 'blockedbyclient' : 'failed');
      }
    });
    const page = await context.newPage();
    const response = await page.goto(url, { waitUntil: 'load', timeout: env.fetchTimeoutMs });
    if (response === null || response.status() >= 400) throw new RunError('PAGE_UNAVAILABLE', `${url} answered HTTP ${response?.status() ?? 'nothing'}`);
    return await use(page);
  } finally {
    await browser.close();
  }
}

export async function browserContext(env: WorkerEnv, strategy: ContextStrategy, url: string): Promise<unknown> {
  switch (strategy) {
    case 'web-page-screenshot':
      return withPage(env, 'web-page-screenshot', url, async (page) => {
        const png = await page.screenshot({ type: 'png', fullPage: false });
        return { format: 'png', bytes: png.length, base64: png.length <= SCREENSHOT_CAP ? png.toString('base64') : null };
      });
    case 'computed-styles':
      return withPage(env, 'computed-styles', url, (page) => page.evaluate(COMPUTED_STYLES_SCRIPT));
    case 'site-audit':
      return withPage(env, 'site-audit', url, async (page) => siteAudit(page, url));
    default:
      throw new RunError('INVALID_ARGUMENT', `${strategy} is not a browser strategy`);
  }
}

// Page-side scripts are strings: the server is compiled without the DOM library, and these run only in Chromium.
const COMPUTED_STYLES_SCRIPT = `Array.from(document.querySelectorAll('body, h1, h2, h3, p, a, button')).slice(0, 60).map((el) => {
  const style = getComputedStyle(el);
  return { tag: el.tagName.toLowerCase(), text: (el.textContent || '').trim().slice(0, 80), fontSize: style.fontSize, fontFamily: style.fontFamily,
    lineHeight: style.lineHeight, color: style.color, backgroundColor: style.backgroundColor };
})`;

const AUDIT_SCRIPT = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    domContentLoadedMs: nav ? Math.round(nav.domContentLoadedEventEnd) : null,
    loadMs: nav ? Math.round(nav.loadEventEnd) : null,
    imagesWithoutAlt: Array.from(document.images).filter((img) => !img.hasAttribute('alt')).length,
    images: document.images.length,
    lang: document.documentElement.lang,
    title: document.title,
    metaDescription: (document.querySelector('meta[name="description"]') || { getAttribute: () => '' }).getAttribute('content') || '',
    h1Count: document.querySelectorAll('h1').length,
    viewport: document.querySelector('meta[name="viewport"]') !== null,
    doctype: document.doctype !== null,
  };
})()`;

interface AuditFacts {
  readonly domContentLoadedMs: number | null;
  readonly loadMs: number | null;
  readonly imagesWithoutAlt: number;
  readonly images: number;
  readonly lang: string;
  readonly title: string;
  readonly metaDescription: string;
  readonly h1Count: number;
  readonly viewport: boolean;
  readonly doctype: boolean;
}

/** A small audit in four categories (0-100 each), from what the loaded page shows. */
async function siteAudit(page: import('playwright-core').Page, url: string): Promise<unknown> {
  const facts = (await page.evaluate(AUDIT_SCRIPT)) as AuditFacts;
  const score = (checks: boolean[]): number => Math.round((100 * checks.filter(Boolean).length) / checks.length);
  return {
    ...facts,
    scores: {
      performance: facts.loadMs === null ? null : Math.max(0, Math.min(100, Math.round(100 - facts.loadMs / 50))),
      accessibility: score([facts.imagesWithoutAlt === 0, facts.lang !== '', facts.h1Count >= 1]),
      bestPractices: score([url.startsWith('https:'), facts.doctype, facts.viewport]),
      seo: score([facts.title !== '', facts.metaDescription !== '', facts.h1Count === 1]),
    },
  };
}
