// Owns prompt validation (spec 4.8, 2.18): a model expands an instruction into a PromptValidatorResult, or a built-in expander does.
import { Ajv } from 'ajv';
import { RunError, type ValidatePromptTask, type Usage } from '../tasks.js';
import { complete, jsonOf, pickProvider } from './providers.js';

export interface PromptValidatorResult {
  analysis_prompt: string;
  requires_tool: 'TOOL_TEXT_EXTRACTOR' | 'NONE';
  response_descriptions: Record<string, string>;
  demos: { detection_dimensions: string[]; cases: Array<{ id: string; title: string; tier: string; dimension_tested: string; html: string; expected: string; reason: string }> };
  suggested_required_inputs: Array<Record<string, unknown>>;
}

const ajv = new Ajv({ strict: true, allErrors: false });
export const checkResult = ajv.compile<PromptValidatorResult>({
  type: 'object',
  required: ['analysis_prompt', 'requires_tool', 'response_descriptions', 'demos', 'suggested_required_inputs'],
  properties: {
    analysis_prompt: { type: 'string', minLength: 1 },
    requires_tool: { enum: ['TOOL_TEXT_EXTRACTOR', 'NONE'] },
    response_descriptions: { type: 'object', additionalProperties: { type: 'string' } },
    demos: {
      type: 'object',
      required: ['detection_dimensions', 'cases'],
      properties: {
        detection_dimensions: { type: 'array', items: { type: 'string' } },
        cases: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'title', 'tier', 'dimension_tested', 'html', 'expected', 'reason'],
            properties: { id: { type: 'string' }, title: { type: 'string' }, tier: { type: 'string' }, dimension_tested: { type: 'string' }, html: { type: 'string' }, expected: { type: 'string' }, reason: { type: 'string' } },
          },
        },
      },
    },
    suggested_required_inputs: { type: 'array', items: { type: 'object' } },
  },
});

/** Words that mean the task reads the page's text (so it needs the text extractor). */
const TEXT_TASK = /\b(text|copy|wording|words?|sentences?|paragraphs?|spelling|typos?|grammar|tone|voice|readab\w*|content|headlines?|headings?|titles?|language|jargon|claims?|terminology|brand|messaging|cta|labels?)\b/i;
const VISUAL_TASK = /\b(colou?rs?|contrast|layout|spacing|font sizes?|screenshots?|images?|logo|visual)\b/i;

/** Pulls quoted or title-cased terms and `{variables}` out of the prompt: candidate runtime inputs. */
function variablesOf(prompt: string): string[] {
  return [...new Set([...prompt.matchAll(/\{\{?\s*([a-zA-Z][\w-]*)\s*\}?\}/g)].map((m) => m[1] ?? ''))].filter((v) => v !== '');
}

/**
 * The deterministic expander used when no provider is configured (or none is asked for and none exists): the same
 * prompt always gives the same result, built from the prompt's own words.
 */
export function expandPrompt(prompt: string, userContextFields: ReadonlyArray<Readonly<Record<string, unknown>>>): PromptValidatorResult {
  const task = prompt.trim().replace(/\s+/g, ' ');
  const readsText = TEXT_TASK.test(task) || !VISUAL_TASK.test(task);
  const dimension = task.length > 80 ? `${task.slice(0, 77)}...` : task;
  const fields = userContextFields.map((f) => `- ${String(f['title'] ?? f['id'])} (\`{{${String(f['id'])}}}\`, ${String(f['type'] ?? 'string')})`);
  const variables = variablesOf(task);
  const analysis = [
    '## Objective',
    `Check the page against this instruction and report every place that fails it: "${task}".`,
    '',
    '## Scope',
    readsText ? 'The visible text of the page (headings, paragraphs, links, buttons, alt text). Ignore navigation boilerplate repeated on every page.' : 'The rendered page as a whole (layout and visual elements).',
    ...(fields.length > 0 ? ['', '## Runtime inputs', ...fields] : []),
    '',
    '## Detection logic',
    `1. Read the ${readsText ? 'page text' : 'page'} in document order.`,
    `2. For each element, decide whether it fails the instruction: ${task}`,
    '3. Report only what you can quote from the page; when unsure, do not report.',
    '4. Report each distinct problem once, at its first place, with `occurrence` counting earlier identical text.',
    '',
    '## Output format',
    'A JSON object `{"findings": [...]}`; each finding has `title`, `severity` (high, medium, low), `issueType`, `targetText` (exact page text) and `suggestion` (replacement text, when there is one).',
  ].join('\n');
  return {
    analysis_prompt: analysis,
    requires_tool: readsText ? 'TOOL_TEXT_EXTRACTOR' : 'NONE',
    response_descriptions: {
      title: `One line naming the problem with respect to: ${dimension}`,
      severity: 'high when a reader is misled or blocked, medium when it hurts quality, low for polish',
      targetText: 'The exact text from the page that has the problem, copied verbatim',
      suggestion: 'The replacement text that fixes the problem, in the page\'s voice',
      issueType: 'A short kebab-case category for the problem',
    },
    demos: {
      detection_dimensions: [dimension],
      cases: [
        { id: 'case-1', title: 'A clear violation', tier: 'positive', dimension_tested: dimension, html: '<p>[text that fails the instruction]</p>', expected: 'one finding quoting the paragraph', reason: `It fails: ${dimension}` },
        { id: 'case-2', title: 'A compliant page', tier: 'negative', dimension_tested: dimension, html: '<p>[text that meets the instruction]</p>', expected: 'no finding', reason: 'Nothing on the page fails the instruction' },
      ],
    },
    suggested_required_inputs: variables
      .filter((v) => !userContextFields.some((f) => f['id'] === v))
      .map((v) => ({ id: v, title: v.replace(/[-_]/g, ' '), type: 'string', required: true })),
  };
}

const SYSTEM = [
  'You turn a one-line QA instruction into a structured QA task. Answer with one JSON object with exactly these keys:',
  '"analysis_prompt" (markdown with sections Objective, Scope, Detection logic, Output format),',
  '"requires_tool" ("TOOL_TEXT_EXTRACTOR" when the task reads page text, else "NONE"),',
  '"response_descriptions" (object with string values for title, severity, targetText, suggestion, issueType),',
  '"demos" ({"detection_dimensions": string[], "cases": [{"id","title","tier","dimension_tested","html","expected","reason"} all strings]}),',
  '"suggested_required_inputs" (array of {"id","title","type"} the user must supply at run time).',
].join(' ');

export async function validatePrompt(task: ValidatePromptTask): Promise<{ validationResult: PromptValidatorResult; usage: Usage; source: string }> {
  if (task.provider === undefined && task.env.providers.length === 0) {
    return { validationResult: expandPrompt(task.prompt, task.userContextFields), usage: { promptTokens: 0, completionTokens: 0 }, source: 'built-in' };
  }
  const provider = pickProvider(task.env, task.provider, 'prompt validation');
  const answer = await complete(task.env, provider, { system: SYSTEM, user: `Instruction: ${task.prompt}\nUser context fields: ${JSON.stringify(task.userContextFields)}`, json: true });
  const parsed = jsonOf(answer.text, 'prompt validation');
  if (!checkResult(parsed)) {
    const first = checkResult.errors?.[0];
    throw new RunError('MODEL_ANSWER_INVALID', `the model's answer is not a valid PromptValidatorResult: ${first === undefined ? 'invalid' : `${first.instancePath || '/'} ${first.message ?? ''}`}`);
  }
  return { validationResult: parsed, usage: answer.usage, source: provider.id };
}
