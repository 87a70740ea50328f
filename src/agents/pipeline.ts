// Owns one run inside a worker: gather context, run the execution strategy (service, ai, service+ai, browser-agent, mcp-tools).
import { gatherContext, type GatheredContext } from './gather/gather.js';
import { parsePage } from './gather/html.js';
import { requireChromium, withPage } from './gather/browser.js';
import { Fetcher } from './gather/fetcher.js';
import { strategyOf, type ServiceId } from './model.js';
import { aiFindings } from './providers/ai-findings.js';
import { mcpFindings } from './providers/mcp.js';
import { brokenLinks, crawl, type CrawlOptions } from './services/links.js';
import { accessibility, openGraph, readability } from './services/page-checks.js';
import { RunError, type Finding, type RunResult, type RunTask, type Usage } from './tasks.js';

const NO_USAGE: Usage = { promptTokens: 0, completionTokens: 0 };

/** What each service needs on top of what the agent gathers. */
async function pageOf(task: RunTask, context: GatheredContext): Promise<NonNullable<GatheredContext['page']>> {
  if (context.page !== undefined) return context.page;
  const { html, finalUrl } = await new Fetcher(task.env).page(task.url);
  return parsePage(html, finalUrl);
}

async function runService(task: RunTask, serviceId: ServiceId, context: GatheredContext): Promise<{ findings: Finding[]; summary: Record<string, unknown> }> {
  switch (serviceId) {
    case 'broken-links': {
      const page = await pageOf(task, context);
      const result = await brokenLinks(task.env, task.url, page.links);
      return { findings: result.findings, summary: { checked: result.checked, skippedBlocked: result.skipped } };
    }
    case 'crawler': {
      const options = (task.behaviour.execution.strategyOptions?.['crawler'] ?? {}) as CrawlOptions;
      const result = await crawl(task.env, task.url, options);
      return { findings: result.findings, summary: { pages: result.pages } };
    }
    case 'og-image-checker':
      return { findings: await openGraph(task.env, task.url, await pageOf(task, context)), summary: {} };
    case 'accessibility-checker':
      return { findings: accessibility(task.url, await pageOf(task, context)), summary: {} };
    case 'readability':
      return { findings: readability(task.url, await pageOf(task, context)), summary: {} };
    case 'screenshot': {
      const shot = await withPage(task.env, 'the screenshot service', task.url, async (page) => (await page.screenshot({ type: 'png' })).length);
      return { findings: [], summary: { screenshotBytes: shot } };
    }
    default:
      throw new RunError('INVALID_ARGUMENT', `unknown service ${String(serviceId)}`);
  }
}

/** Sizes of what was gathered, for the execution record (the content itself stays in the worker). */
function contextSummary(context: GatheredContext): Record<string, unknown> {
  return Object.fromEntries(Object.entries(context.parts).map(([strategy, part]) => [strategy, { bytes: JSON.stringify(part ?? null).length }]));
}

export async function runAgent(task: RunTask): Promise<RunResult> {
  const strategy = strategyOf(task.behaviour);
  if (strategy === 'browser-agent') requireChromium(task.env, 'the browser-agent strategy');
  const context = await gatherContext(task.env, task.url, task.behaviour.contextGathering);
  const gathered = contextSummary(context);
  const serviceId = task.behaviour.execution.serviceId;
  switch (strategy) {
    case 'service': {
      if (serviceId === undefined) throw new RunError('INVALID_ARGUMENT', 'a service agent needs execution.serviceId');
      const { findings, summary } = await runService(task, serviceId, context);
      return { findings, usage: NO_USAGE, context: { ...gathered, service: summary } };
    }
    case 'service+ai': {
      if (serviceId === undefined) throw new RunError('INVALID_ARGUMENT', 'a service+ai agent needs execution.serviceId');
      const service = await runService(task, serviceId, context);
      const ai = await aiFindings({ env: task.env, behaviour: task.behaviour, context, userContext: task.userContext, serviceFindings: service.findings });
      return { findings: ai.findings, usage: ai.usage, provider: ai.provider, context: { ...gathered, service: service.summary } };
    }
    case 'browser-agent': {
      // The page as rendered (scripts run), added to what the agent gathered, then the model.
      const rendered = await withPage(task.env, 'the browser-agent strategy', task.url, async (page) => ({ title: await page.title(), text: (await page.innerText('body')).slice(0, 60_000) }));
      const withRendered: GatheredContext = { ...context, parts: { ...context.parts, 'rendered-page': rendered } };
      const ai = await aiFindings({ env: task.env, behaviour: task.behaviour, context: withRendered, userContext: task.userContext });
      return { findings: ai.findings, usage: ai.usage, provider: ai.provider, context: contextSummary(withRendered) };
    }
    case 'mcp-tools': {
      const result = await mcpFindings({ env: task.env, behaviour: task.behaviour, context, userContext: task.userContext });
      return { findings: result.findings, usage: result.usage, provider: result.provider, context: { ...gathered, mcp: result.summary } };
    }
    case 'ai': {
      const ai = await aiFindings({ env: task.env, behaviour: task.behaviour, context, userContext: task.userContext });
      return { findings: ai.findings, usage: ai.usage, provider: ai.provider, context: gathered };
    }
  }
}
