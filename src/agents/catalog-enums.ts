// Owns the enumerated values of agent fields (spec 4.20), shared by the request schemas and the workers.
export const CONTEXT_STRATEGIES = [
  'web-page-text',
  'web-page-screenshot',
  'web-page-html',
  'web-page-css',
  'web-page-links',
  'web-page-accessibility',
  'computed-styles',
  'robots-txt',
  'sitemap-data',
  'site-audit',
  'rest-api',
  'none',
] as const;
export const EXECUTION_STRATEGIES = ['ai', 'service', 'service+ai', 'browser-agent', 'mcp-tools'] as const;
export const SERVICE_IDS = ['broken-links', 'crawler', 'screenshot', 'accessibility-checker', 'og-image-checker'] as const;
export const RESPONSE_ADAPTERS = [
  'broken-links-response',
  'crawler-response',
  'screenshot-response',
  'accessibility-checker-response',
  'og-image-checker-response',
] as const;
export const PROVIDERS = ['llm_a', 'llm_b'] as const;
