// Owns the catalog of built-in agents (`system: true`): their identity and the behaviour each runs.
import type { AgentIdentity, Behaviour } from './model.js';

export interface BuiltInAgent {
  readonly identity: AgentIdentity;
  readonly behaviour: Behaviour;
}

const builtIn = (id: string, name: string, description: string, behaviour: Behaviour): BuiltInAgent => ({
  identity: { id, name, description, enabled: true, managedBy: 'plait', system: true },
  behaviour,
});

/**
 * Every built-in is a pure `service` agent: it needs no model and gives the same findings for the same page.
 * `readability` runs an internal service (not a serviceId customers can pick; spec 4.20 lists five).
 */
export const BUILT_IN_AGENTS: readonly BuiltInAgent[] = [
  builtIn('broken-links', 'Broken links', 'Checks every link and image on the page and reports the ones that fail or answer 4xx/5xx.', {
    contextGathering: { strategies: ['web-page-links'] },
    execution: { executionStrategy: 'service', serviceId: 'broken-links' },
  }),
  builtIn('open-graph-tags', 'Open Graph tags', 'Reports missing or broken Open Graph tags (og:title, og:description, og:image) and an og:image that does not load.', {
    contextGathering: { strategies: ['web-page-html'] },
    execution: { executionStrategy: 'service', serviceId: 'og-image-checker' },
  }),
  builtIn('alt-text-and-headings', 'Image alt text and headings', 'Reports images without alt text, a missing or repeated h1, skipped heading levels and empty links.', {
    contextGathering: { strategies: ['web-page-accessibility'] },
    execution: { executionStrategy: 'service', serviceId: 'accessibility-checker' },
  }),
  builtIn('readability', 'Readability', 'Scores each paragraph with the Flesch reading-ease formula and reports long sentences and hard-to-read paragraphs.', {
    contextGathering: { strategies: ['web-page-text'] },
    execution: { executionStrategy: 'service', serviceId: 'readability' },
  }),
];

const byId = new Map(BUILT_IN_AGENTS.map((agent) => [agent.identity.id, agent]));

export const builtInAgent = (id: string): BuiltInAgent | undefined => byId.get(id);
