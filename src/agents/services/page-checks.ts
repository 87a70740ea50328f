// Owns the single-page services: `og-image-checker`, `accessibility-checker` and the built-in `readability` check.
import { Fetcher } from '../gather/fetcher.js';
import type { PageFacts } from '../gather/html.js';
import type { Finding, WorkerEnv } from '../tasks.js';

const REQUIRED_OG = ['og:title', 'og:description', 'og:image'] as const;

export async function openGraph(env: WorkerEnv, url: string, page: PageFacts): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const tag of REQUIRED_OG) {
    if ((page.meta[tag] ?? '').trim() !== '') continue;
    findings.push({
      title: `Missing Open Graph tag ${tag}`,
      description: `The page has no <meta property="${tag}">; links shared on social networks show no ${tag.slice(3)}.`,
      severity: tag === 'og:image' ? 'high' : 'medium',
      issueType: 'missing-og-tag',
      sourceUrl: url,
      detail: { tag },
    });
  }
  const image = page.meta['og:image'];
  if (image !== undefined && image.trim() !== '') {
    let href: string | undefined;
    try {
      href = new URL(image, url).href;
    } catch (error) {
      findings.push({ title: 'Invalid og:image URL', description: `og:image "${image}" is not a URL (${(error as Error).message}).`, severity: 'high', issueType: 'broken-og-image', sourceUrl: url, detail: { image } });
    }
    if (href !== undefined) {
      const status = await new Fetcher(env).status(href);
      if (status.code !== 'BLOCKED_ADDRESS' && (status.status === undefined || status.status >= 400)) {
        findings.push({
          title: 'og:image does not load',
          description: `og:image ${href} ${status.status === undefined ? `could not be reached (${status.code ?? 'error'})` : `answered HTTP ${status.status}`}.`,
          severity: 'high',
          issueType: 'broken-og-image',
          sourceUrl: url,
          detail: { image: href, status: status.status ?? null },
        });
      }
    }
  }
  return findings;
}

export function accessibility(url: string, page: PageFacts): Finding[] {
  const findings: Finding[] = [];
  for (const image of page.images) {
    if (image.alt !== null) continue;
    findings.push({ title: `Image without alt text: ${image.src}`, description: `The image ${image.src} has no alt attribute; screen readers announce it as an unnamed image. Add alt text (or alt="" if it is decorative).`, severity: 'high', issueType: 'missing-alt-text', sourceUrl: url, detail: { src: image.src } });
  }
  const h1s = page.headings.filter((h) => h.level === 1);
  if (h1s.length === 0) findings.push({ title: 'No h1 heading', description: 'The page has no <h1>; it should have exactly one that names the page.', severity: 'medium', issueType: 'missing-h1', sourceUrl: url });
  h1s.slice(1).forEach((h, i) => findings.push({ title: 'More than one h1', description: `"${h.text}" is h1 number ${i + 2}; keep one h1 per page.`, severity: 'low', issueType: 'multiple-h1', sourceUrl: url, targetText: h.text, occurrence: 1 }));
  let previous = 0;
  for (const heading of page.headings) {
    if (previous !== 0 && heading.level > previous + 1 && heading.text !== '') {
      findings.push({ title: `Heading level skipped (h${previous} to h${heading.level})`, description: `"${heading.text}" is an h${heading.level} right after an h${previous}; use h${previous + 1}.`, severity: 'low', issueType: 'skipped-heading-level', sourceUrl: url, targetText: heading.text, occurrence: 1, detail: { from: previous, to: heading.level } });
    }
    previous = heading.level;
  }
  for (const control of page.unnamedControls) {
    findings.push({ title: `${control.tag === 'a' ? 'Link' : 'Button'} without an accessible name`, description: `A <${control.tag}>${control.href === null ? '' : ` to ${control.href}`} has no text and no aria-label.`, severity: 'medium', issueType: 'unnamed-control', sourceUrl: url, detail: { ...control } });
  }
  if (page.lang === null || page.lang.trim() === '') findings.push({ title: 'Page language not set', description: 'The <html> element has no lang attribute.', severity: 'low', issueType: 'missing-lang', sourceUrl: url });
  return findings;
}

/** Syllables by vowel groups, with a silent final e: the usual estimate behind Flesch scores. */
function syllables(word: string): number {
  const w = word.toLowerCase().replace(/[^a-z]/g, '');
  if (w.length <= 3) return 1;
  const groups = w.replace(/e$/, '').match(/[aeiouy]+/g);
  return Math.max(1, groups?.length ?? 1);
}

export const sentencesOf = (text: string): string[] => (text.match(/[^.!?]+[.!?]*/g) ?? []).map((s) => s.trim()).filter((s) => s !== '');

/** Flesch reading ease: 206.835 - 1.015 (words/sentences) - 84.6 (syllables/words); below 30 is very hard. */
export function fleschReadingEase(text: string): number {
  const sentences = Math.max(1, sentencesOf(text).length);
  const words = text.split(/\s+/).filter((w) => /[a-z]/i.test(w));
  if (words.length === 0) return 100;
  const syl = words.reduce((sum, w) => sum + syllables(w), 0);
  return 206.835 - 1.015 * (words.length / sentences) - 84.6 * (syl / words.length);
}

const LONG_SENTENCE_WORDS = 35;
const HARD_PARAGRAPH_SCORE = 30;

export function readability(url: string, page: PageFacts): Finding[] {
  const findings: Finding[] = [];
  const seen = new Map<string, number>();
  for (const paragraph of page.paragraphs) {
    const score = fleschReadingEase(paragraph);
    const words = paragraph.split(/\s+/).length;
    if (score < HARD_PARAGRAPH_SCORE && words >= 20) {
      const first = sentencesOf(paragraph)[0] ?? paragraph;
      const occurrence = (seen.get(first) ?? 0) + 1;
      seen.set(first, occurrence);
      findings.push({ title: 'Hard-to-read paragraph', description: `This paragraph scores ${score.toFixed(0)} on the Flesch reading-ease scale (below ${HARD_PARAGRAPH_SCORE} is very hard). Use shorter sentences and simpler words.`, severity: 'medium', issueType: 'hard-to-read', sourceUrl: url, targetText: first, occurrence, detail: { score: Math.round(score) } });
    }
    for (const sentence of sentencesOf(paragraph)) {
      const count = sentence.split(/\s+/).length;
      if (count <= LONG_SENTENCE_WORDS) continue;
      const occurrence = (seen.get(sentence) ?? 0) + 1;
      seen.set(sentence, occurrence);
      findings.push({ title: 'Long sentence', description: `This sentence has ${count} words; more than ${LONG_SENTENCE_WORDS} is hard to follow. Split it.`, severity: 'low', issueType: 'long-sentence', sourceUrl: url, targetText: sentence, occurrence, detail: { words: count } });
    }
  }
  return findings;
}
