// Owns the authoring helpers of upstream 1.10: config/resolve, prompt/enhance, prompt/refine, extract; a model when configured, rules otherwise.
import { Ajv } from 'ajv';
import { CONTEXT_STRATEGIES, EXECUTION_STRATEGIES, SERVICE_IDS } from '../catalog-enums.js';
import type { ContextStrategy, ExecutionStrategy, ServiceId } from '../model.js';
import { RunError, type AssistTask, type Usage } from '../tasks.js';
import { complete, jsonOf, pickProvider } from './providers.js';

export interface ResolvedConfig {
  contextGathering: { strategies: ContextStrategy[] };
  execution: { executionStrategy: ExecutionStrategy; serviceId?: ServiceId };
  reason: string;
}

const RULES: ReadonlyArray<{ test: RegExp; strategies: ContextStrategy[]; execution: ResolvedConfig['execution']; reason: string }> = [
  { test: /\b(broken|dead|404)\b.*\b(links?|images?)\b|\blinks?\b.*\b(broken|dead|work)/i, strategies: ['web-page-links'], execution: { executionStrategy: 'service', serviceId: 'broken-links' }, reason: 'checking links is the broken-links service' },
  { test: /\b(open graph|og:|og tags?|social (share|preview))/i, strategies: ['web-page-html'], execution: { executionStrategy: 'service', serviceId: 'og-image-checker' }, reason: 'Open Graph tags are checked by the og-image-checker service' },
  { test: /\b(alt text|alt attributes?|accessib\w*|a11y|wcag|aria)\b/i, strategies: ['web-page-accessibility'], execution: { executionStrategy: 'service+ai', serviceId: 'accessibility-checker' }, reason: 'accessibility facts come from the checker, judged by the model' },
  { test: /\b(crawl|every page|whole site|site-wide|all pages)\b/i, strategies: ['sitemap-data'], execution: { executionStrategy: 'service', serviceId: 'crawler' }, reason: 'a site-wide check needs the crawler' },
  { test: /\b(screenshot|visual|layout|colou?rs?|contrast)\b/i, strategies: ['web-page-screenshot', 'computed-styles'], execution: { executionStrategy: 'ai' }, reason: 'a visual check needs the rendered page' },
  { test: /\b(css|styles?|fonts?)\b/i, strategies: ['web-page-css'], execution: { executionStrategy: 'ai' }, reason: 'a style check reads the stylesheets' },
  { test: /\brobots\.txt|\bcrawlab/i, strategies: ['robots-txt'], execution: { executionStrategy: 'ai' }, reason: 'reads robots.txt' },
  { test: /\bsitemap\b/i, strategies: ['sitemap-data'], execution: { executionStrategy: 'ai' }, reason: 'reads the sitemap' },
  { test: /\b(seo|performance|lighthouse|audit)\b/i, strategies: ['site-audit'], execution: { executionStrategy: 'ai' }, reason: 'an audit needs the site-audit gatherer' },
];

/** Deterministic choice from the instruction's words; the default is `ai` over the page text. */
export function resolveByRules(instructions: string): ResolvedConfig {
  const rule = RULES.find((r) => r.test.test(instructions));
  if (rule !== undefined) return { contextGathering: { strategies: [...rule.strategies] }, execution: { ...rule.execution }, reason: rule.reason };
  return { contextGathering: { strategies: ['web-page-text'] }, execution: { executionStrategy: 'ai' }, reason: 'a judgement over the page text' };
}

const ajv = new Ajv({ strict: true });
const checkResolved = ajv.compile<ResolvedConfig>({
  type: 'object',
  required: ['contextGathering', 'execution'],
  properties: {
    contextGathering: { type: 'object', required: ['strategies'], properties: { strategies: { type: 'array', minItems: 1, items: { enum: [...CONTEXT_STRATEGIES] } } } },
    execution: { type: 'object', required: ['executionStrategy'], properties: { executionStrategy: { enum: [...EXECUTION_STRATEGIES] }, serviceId: { enum: [...SERVICE_IDS] } } },
    reason: { type: 'string' },
  },
});


const NO_USAGE: Usage = { promptTokens: 0, completionTokens: 0 };
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** With no provider configured (and none asked for) the rules answer; otherwise the model, checked like any answer. */
export async function assist(task: AssistTask): Promise<{ result: unknown; usage: Usage; source: string }> {
  const offline = task.provider === undefined && task.env.providers.length === 0;
  if (offline) return { result: byRules(task), usage: NO_USAGE, source: 'built-in' };
  const provider = pickProvider(task.env, task.provider, `agents ${task.op}`);
  const { system, user } = promptFor(task);
  const answer = await complete(task.env, provider, { system, user, json: true });
  const parsed = jsonOf(answer.text, task.op);
  check(task.op, parsed);
  return { result: parsed, usage: answer.usage, source: provider.id };
}

function byRules(task: AssistTask): unknown {
  switch (task.op) {
    case 'resolve':
      return resolveByRules(str(task.input['instructions']));
    case 'enhance':
      return enhanceByRules(str(task.input['prompt']));
    case 'refine':
      return refineByRules(str(task.input['prompt']), (task.input['feedback'] as Feedback[] | undefined) ?? []);
    case 'extract':
      return { agents: extractByRules(str(task.input['content'])) };
  }
}

function enhanceByRules(prompt: string): { isSpecific: boolean; score: number; missing: string[]; clarifyingQuestions: string[]; enhancedPrompt: string } {
  const checks: Array<[string, RegExp, string]> = [
    ['a target', /\b(headings?|titles?|links?|images?|buttons?|paragraphs?|text|copy|prices?|dates?|forms?|tags?|cta|labels?)\b/i, 'Which part of the page should be checked (headings, body text, links, images...)?'],
    ['a criterion', /\b(must|should|never|always|longer|shorter|more than|less than|at least|at most|missing|without|match|consistent|correct)\b|\d/i, 'What exactly makes an element fail (a limit, a required word, a forbidden phrase)?'],
    ['enough detail', /\S+(\s+\S+){5,}/, 'Can you describe the check in a full sentence, with an example of a failure?'],
  ];
  const missing = checks.filter(([, test]) => !test.test(prompt));
  const score = Math.round((100 * (checks.length - missing.length)) / checks.length);
  const enhancedPrompt = `${prompt.trim().replace(/\.?$/, '.')} Report each element that fails, quote its exact text as targetText, rate severity (high: misleads or blocks a reader; medium: hurts quality; low: polish) and propose replacement text where one exists.`;
  return { isSpecific: missing.length === 0, score, missing: missing.map(([name]) => name), clarifyingQuestions: missing.map(([, , question]) => question), enhancedPrompt };
}

interface Feedback {
  readonly findingTitle?: string;
  readonly targetText?: string;
  readonly verdict: 'correct' | 'incorrect' | 'missed';
  readonly comment?: string;
}

function refineByRules(prompt: string, feedback: readonly Feedback[]): { refinedPrompt: string; changes: string[] } {
  const changes: string[] = [];
  for (const item of feedback) {
    const what = item.targetText ?? item.findingTitle ?? 'this case';
    const why = item.comment === undefined ? '' : ` (${item.comment})`;
    if (item.verdict === 'incorrect') changes.push(`Do not report "${what}"${why}.`);
    else if (item.verdict === 'missed') changes.push(`Also report cases like "${what}"${why}.`);
    else changes.push(`Keep reporting cases like "${what}".`);
  }
  const refinedPrompt = changes.length === 0 ? prompt : `${prompt.trim()}\n\nFrom reviewed results:\n${changes.map((c) => `- ${c}`).join('\n')}`;
  return { refinedPrompt, changes };
}

/** One draft per checklist item (bullets, numbers, or one item per line), each with its resolved strategy. */
function extractByRules(content: string): Array<Record<string, unknown>> {
  const lines = content.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !/^#/.test(l));
  const items = lines.map((l) => l.replace(/^([-*•]|\d+[.)]|\[[ x]\])\s*/i, '').trim()).filter((l) => l.length >= 8).slice(0, 50);
  return items.map((item) => {
    const resolved = resolveByRules(item);
    const name = item.length > 60 ? `${item.slice(0, 57)}...` : item;
    return {
      name,
      description: item,
      enabled: true,
      ...(resolved.execution.executionStrategy === 'service' ? {} : { instructions: item }),
      rawInstructions: item,
      contextGathering: resolved.contextGathering,
      execution: resolved.execution,
    };
  });
}

function promptFor(task: AssistTask): { system: string; user: string } {
  const json = 'Answer with one JSON object and nothing else.';
  switch (task.op) {
    case 'resolve':
      return {
        system: `${json} Pick how a QA agent gathers context and executes: {"contextGathering": {"strategies": [one or more of ${CONTEXT_STRATEGIES.join(', ')}]}, "execution": {"executionStrategy": one of ${EXECUTION_STRATEGIES.join(', ')}, "serviceId"?: one of ${SERVICE_IDS.join(', ')}}, "reason": string}.`,
        user: str(task.input['instructions']),
      };
    case 'enhance':
      return { system: `${json} Judge whether a QA instruction is specific enough: {"isSpecific": boolean, "score": 0-100, "missing": string[], "clarifyingQuestions": string[], "enhancedPrompt": string}.`, user: str(task.input['prompt']) };
    case 'refine':
      return { system: `${json} Rewrite a QA instruction from reviewer feedback on its demo results: {"refinedPrompt": string, "changes": string[]}.`, user: `Instruction: ${str(task.input['prompt'])}\nFeedback: ${JSON.stringify(task.input['feedback'] ?? [])}` };
    case 'extract':
      return {
        system: `${json} Extract QA agent drafts from a document: {"agents": [{"name", "description", "instructions", "contextGathering": {"strategies": [...]}, "execution": {"executionStrategy", "serviceId"?}}]}.`,
        user: str(task.input['content']).slice(0, 100_000),
      };
  }
}

function check(op: AssistTask['op'], parsed: unknown): void {
  const fail = (why: string): never => {
    throw new RunError('MODEL_ANSWER_INVALID', `the model's ${op} answer is invalid: ${why}`);
  };
  const object = (typeof parsed === 'object' && parsed !== null ? parsed : fail('not an object')) as Record<string, unknown>;
  if (op === 'resolve' && !checkResolved(parsed)) fail(checkResolved.errors?.[0]?.message ?? 'shape');
  if (op === 'enhance' && (typeof object['isSpecific'] !== 'boolean' || typeof object['enhancedPrompt'] !== 'string')) fail('needs isSpecific and enhancedPrompt');
  if (op === 'refine' && typeof object['refinedPrompt'] !== 'string') fail('needs refinedPrompt');
  if (op === 'extract' && !Array.isArray(object['agents'])) fail('needs an agents array');
}
