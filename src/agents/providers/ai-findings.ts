// Owns the `ai` step of a run: the prompt (instructions + gathered context), and checking the model's findings against a schema.
import { Ajv } from 'ajv';
import type { Behaviour } from '../model.js';
import { RunError, type Finding, type Usage, type WorkerEnv } from '../tasks.js';
import type { GatheredContext } from '../gather/gather.js';
import { complete, jsonOf, pickProvider } from './providers.js';

const ajv = new Ajv({ allErrors: false, strict: true });
const checkAnswer = ajv.compile({
  type: 'object',
  required: ['findings'],
  properties: {
    findings: {
      type: 'array',
      maxItems: 500,
      items: {
        type: 'object',
        required: ['title', 'severity'],
        properties: {
          title: { type: 'string', minLength: 1, maxLength: 500 },
          description: { type: 'string', maxLength: 5000 },
          severity: { enum: ['high', 'medium', 'low'] },
          issueType: { type: 'string', maxLength: 100 },
          targetText: { type: 'string', maxLength: 2000 },
          occurrence: { type: 'integer', minimum: 1 },
          suggestion: { type: 'string', maxLength: 5000 },
        },
      },
    },
  },
});

interface ModelFinding {
  title: string;
  description?: string;
  severity: Finding['severity'];
  issueType?: string;
  targetText?: string;
  occurrence?: number;
  suggestion?: string;
}

const SYSTEM = [
  'You are a QA review agent. You analyse the web page context you are given and report issues.',
  'Answer with one JSON object and nothing else: {"findings": [{"title": string, "description": string, "severity": "high"|"medium"|"low",',
  '"issueType": string, "targetText": string (exact text copied from the page, when the issue is about specific text), "occurrence": integer >= 1,',
  '"suggestion": string (replacement text, when you propose one)}]}. Report nothing you cannot see in the context; an empty list is a valid answer.',
].join(' ');

export interface AiStepInput {
  readonly env: WorkerEnv;
  readonly behaviour: Behaviour;
  readonly context: GatheredContext;
  readonly userContext: Readonly<Record<string, unknown>>;
  /** Findings of the service step (`service+ai`): the model reviews them. */
  readonly serviceFindings?: readonly Finding[];
}

export function buildUserPrompt(input: AiStepInput): string {
  const sections = [`# Instructions\n${input.behaviour.instructions ?? ''}`, `# Page\n${input.context.url}`];
  const descriptions = input.behaviour.execution.responseDescriptions;
  if (descriptions !== undefined) sections.push(`# Field descriptions\n${JSON.stringify(descriptions)}`);
  if (Object.keys(input.userContext).length > 0) sections.push(`# User context\n${JSON.stringify(input.userContext)}`);
  for (const [strategy, part] of Object.entries(input.context.parts)) sections.push(`# Context: ${strategy}\n${JSON.stringify(part)}`);
  if (input.serviceFindings !== undefined) {
    sections.push(`# Findings of the automated check\nKeep the ones that matter under the instructions, improve their wording, add a suggestion where useful.\n${JSON.stringify(input.serviceFindings)}`);
  }
  return sections.join('\n\n');
}

/** Asks the model, then checks its answer; a malformed answer fails the run (it is never half-applied). */
export async function aiFindings(input: AiStepInput): Promise<{ findings: Finding[]; usage: Usage; provider: 'llm_a' | 'llm_b' }> {
  const aiConfig = input.behaviour.execution.aiConfig;
  const provider = pickProvider(input.env, aiConfig?.provider, 'this agent');
  const answer = await complete(input.env, provider, { system: SYSTEM, user: buildUserPrompt(input), json: true, ...(aiConfig?.model === undefined ? {} : { model: aiConfig.model }) });
  const parsed = jsonOf(answer.text, 'findings');
  if (!checkAnswer(parsed)) {
    const first = checkAnswer.errors?.[0];
    throw new RunError('MODEL_ANSWER_INVALID', `the model's answer does not match the findings schema: ${first === undefined ? 'invalid' : `${first.instancePath || '/'} ${first.message ?? ''}`}`);
  }
  const findings = (parsed as { findings: ModelFinding[] }).findings.map(
    (f): Finding => ({
      title: f.title,
      description: f.description ?? '',
      severity: f.severity,
      issueType: f.issueType ?? 'ai-finding',
      sourceUrl: input.context.url,
      ...(f.targetText === undefined || f.targetText === '' ? {} : { targetText: f.targetText, occurrence: f.occurrence ?? 1 }),
      ...(f.suggestion === undefined ? {} : { suggestion: f.suggestion }),
    }),
  );
  return { findings, usage: answer.usage, provider: answer.provider };
}
