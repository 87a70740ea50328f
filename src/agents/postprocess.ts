// Owns post-processing of a run's findings (spec 4.20 `postProcess`): guardrails, deleting the previous run's suggestions, annotations.
import type { CollabDocuments } from '../doc/collab-state.js';
import type { AnnotationInput } from '../doc/annotations/model.js';
import type { DocumentKey } from '../document-key.js';
import { stageOn, type AnnotationStrategy, type PostProcess } from './model.js';
import type { Finding } from './tasks.js';

/** Text fields of a finding never carry markup onto a document. */
export const stripHtml = (text: string): string =>
  text
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/gi, '')
    .replace(/<[^>]*>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .trim();

/**
 * Guardrails: HTML stripped from every text field, then one finding per (source URL, target text, occurrence, issue
 * type). Findings with no target text (page-level: a missing tag, an image) are told apart by their title as well,
 * or every page-level finding of one type would collapse into one.
 */
export function guardrails(findings: readonly Finding[]): Finding[] {
  const seen = new Set<string>();
  const out: Finding[] = [];
  for (const finding of findings) {
    const clean: Finding = {
      ...finding,
      title: stripHtml(finding.title),
      description: stripHtml(finding.description),
      ...(finding.targetText === undefined ? {} : { targetText: stripHtml(finding.targetText) }),
      ...(finding.suggestion === undefined ? {} : { suggestion: stripHtml(finding.suggestion) }),
    };
    const key = JSON.stringify([clean.sourceUrl, clean.targetText ?? null, clean.targetText === undefined ? clean.title : (clean.occurrence ?? 1), clean.issueType]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(clean);
  }
  return out;
}

/** The smallest differing word run between `before` and `after` (word-level anchoring). */
export function wordDiff(before: string, after: string): { from: string; to: string } | undefined {
  const a = before.split(/(\s+)/);
  const b = after.split(/(\s+)/);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const from = a.slice(start, endA).join('').trim();
  const to = b.slice(start, endB).join('').trim();
  return from === '' ? undefined : { from, to };
}

export interface RunIdentity {
  readonly agentId: string;
  readonly agentName: string;
  readonly executionId: string;
  readonly url: string;
}

function commentText(finding: Finding): string {
  return finding.suggestion === undefined ? `${finding.title}\n${finding.description}` : `${finding.title}\n${finding.description}\nSuggestion: ${finding.suggestion}`;
}

/** Findings as suggestion annotations, by strategy (docs/agents.md). */
export function annotationsFor(run: RunIdentity, findings: readonly Finding[], strategy: AnnotationStrategy): AnnotationInput[] {
  const from = { userId: `agent:${run.agentId}`, name: run.agentName };
  const context = (finding: Finding | undefined): Record<string, unknown> => ({
    agentId: run.agentId,
    executionId: run.executionId,
    sourceUrl: run.url,
    ...(finding === undefined ? {} : { issueType: finding.issueType, severity: finding.severity, ...(finding.detail === undefined ? {} : { detail: finding.detail }) }),
  });
  if (strategy === 'none' || findings.length === 0) return [];
  if (strategy === 'page-level') {
    return [
      {
        type: 'suggestion',
        commentData: findings.map((f) => ({ commentText: commentText(f), from })),
        context: context(undefined),
        suggestion: { status: 'pending', agentId: run.agentId, findings: findings.length },
      },
    ];
  }
  return findings.map((finding) => {
    let target = finding.targetText === undefined ? undefined : { targetText: finding.targetText, occurrence: finding.occurrence ?? 1 };
    let suggested = finding.suggestion;
    if (strategy === 'word-level' && finding.targetText !== undefined && finding.suggestion !== undefined) {
      const diff = wordDiff(finding.targetText, finding.suggestion);
      // The anchor narrows to the changed words, which must still be findable: first occurrence inside the sentence.
      if (diff !== undefined) {
        target = { targetText: diff.from, occurrence: 1 };
        suggested = diff.to;
      }
    }
    return {
      type: 'suggestion',
      commentData: [{ commentText: commentText(finding), from }],
      ...(target === undefined ? {} : { targetElement: target }),
      context: context(finding),
      suggestion: {
        status: 'pending',
        agentId: run.agentId,
        issueType: finding.issueType,
        severity: finding.severity,
        ...(target === undefined ? {} : { originalText: target.targetText }),
        ...(suggested === undefined ? {} : { suggestedText: suggested }),
      },
    };
  });
}

export interface Applied {
  readonly deleted: number;
  readonly created: string[];
}

/** Writes the run's annotations through the document's actor (connected sync clients see them live). */
export async function applyToDocument(collab: CollabDocuments, ref: DocumentKey, run: RunIdentity, findings: readonly Finding[], post: PostProcess | undefined): Promise<Applied> {
  let deleted = 0;
  if (stageOn(post?.deletePreviousSuggestions)) {
    const previous = await collab.read(ref, (doc) =>
      [...doc.annotations.all()]
        .filter((a) => a.type === 'suggestion' && a.context?.['agentId'] === run.agentId && a.context['sourceUrl'] === run.url && a.context['executionId'] !== run.executionId)
        .map((a) => a.annotationId),
    );
    if (previous.length > 0) {
      const removed = await collab.annotations(ref, (state) => state.remove({ annotationIds: previous }));
      deleted = Object.values(removed).filter((r) => r.success).length;
    }
  }
  const strategy = stageOn(post?.annotations) ? (post?.annotations?.strategy ?? 'findings') : 'none';
  const inputs = annotationsFor(run, findings, strategy);
  if (inputs.length === 0) return { deleted, created: [] };
  const added = await collab.annotations(ref, (state) => state.add(inputs));
  return { deleted, created: Object.values(added).filter((r) => r.success).map((r) => r.annotationId) };
}
