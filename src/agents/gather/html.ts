// Owns reading an HTML page with node-html-parser: text, paragraphs, links, images, headings, meta tags, styles.
import { parse, type HTMLElement } from 'node-html-parser';

export interface PageLink {
  readonly href: string;
  readonly text: string;
  readonly kind: 'a' | 'img' | 'script' | 'link';
}

export interface PageImage {
  readonly src: string;
  /** null when the attribute is missing; "" marks a decorative image. */
  readonly alt: string | null;
}

export interface PageFacts {
  readonly title: string;
  readonly lang: string | null;
  readonly text: string;
  readonly paragraphs: readonly string[];
  readonly headings: ReadonlyArray<{ readonly level: number; readonly text: string }>;
  /** Absolute http(s) URLs of links, images, scripts and stylesheets. */
  readonly links: readonly PageLink[];
  readonly images: readonly PageImage[];
  /** `name` or `property` of each meta tag (lower case) -> content. */
  readonly meta: Readonly<Record<string, string>>;
  readonly inlineCss: readonly string[];
  readonly stylesheets: readonly string[];
  /** Links and buttons with no text and no aria-label. */
  readonly unnamedControls: ReadonlyArray<{ readonly tag: string; readonly href: string | null }>;
}

const collapse = (text: string): string => text.replace(/\s+/g, ' ').trim();

function absolute(href: string | undefined, base: string): string | undefined {
  if (href === undefined || href.trim() === '' || href.startsWith('#')) return undefined;
  try {
    const url = new URL(href.trim(), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    // Not a URL at all (e.g. "http://["): nothing to check or follow.
    return undefined;
  }
}

export function parsePage(html: string, baseUrl: string): PageFacts {
  const root = parse(html, { comment: false, blockTextElements: { script: true, style: true, noscript: true, pre: true } });
  const base = absolute(root.querySelector('base')?.getAttribute('href'), baseUrl) ?? baseUrl;
  const inlineCss = root.querySelectorAll('style').map((el) => el.text);
  const links: PageLink[] = [];
  const add = (el: HTMLElement, attribute: string, kind: PageLink['kind'], text: string): void => {
    const href = absolute(el.getAttribute(attribute), base);
    if (href !== undefined) links.push({ href, text, kind });
  };
  for (const a of root.querySelectorAll('a[href]')) add(a, 'href', 'a', collapse(a.text));
  for (const img of root.querySelectorAll('img[src]')) add(img, 'src', 'img', img.getAttribute('alt') ?? '');
  for (const script of root.querySelectorAll('script[src]')) add(script, 'src', 'script', '');
  const stylesheets: string[] = [];
  for (const link of root.querySelectorAll('link[href]')) {
    const rel = (link.getAttribute('rel') ?? '').toLowerCase();
    if (!rel.split(/\s+/).includes('stylesheet')) continue;
    add(link, 'href', 'link', '');
    const href = absolute(link.getAttribute('href'), base);
    if (href !== undefined) stylesheets.push(href);
  }
  const meta: Record<string, string> = {};
  for (const tag of root.querySelectorAll('meta')) {
    const name = (tag.getAttribute('property') ?? tag.getAttribute('name') ?? '').toLowerCase();
    const content = tag.getAttribute('content');
    if (name !== '' && content !== undefined && !(name in meta)) meta[name] = content;
  }
  const unnamedControls = root
    .querySelectorAll('a[href], button')
    .filter((el) => collapse(el.text) === '' && (el.getAttribute('aria-label') ?? '').trim() === '' && el.querySelector('img[alt]') === null)
    .map((el) => ({ tag: el.tagName.toLowerCase(), href: el.getAttribute('href') ?? null }));
  const images = root.querySelectorAll('img').map((img) => ({ src: absolute(img.getAttribute('src'), base) ?? img.getAttribute('src') ?? '', alt: img.getAttribute('alt') ?? null }));
  const headings = root.querySelectorAll('h1, h2, h3, h4, h5, h6').map((h) => ({ level: Number(h.tagName.slice(1)), text: collapse(h.text) }));
  const body = root.querySelector('body') ?? root;
  for (const el of body.querySelectorAll('script, style, noscript, template')) el.remove();
  return {
    title: collapse(root.querySelector('title')?.text ?? ''),
    lang: root.querySelector('html')?.getAttribute('lang') ?? null,
    text: collapse(body.structuredText),
    paragraphs: body.querySelectorAll('p').map((p) => collapse(p.text)).filter((p) => p !== ''),
    headings,
    links,
    images,
    meta,
    inlineCss,
    stylesheets,
    unnamedControls,
  };
}
