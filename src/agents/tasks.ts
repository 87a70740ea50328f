// Owns what crosses the worker boundary: pool tasks, their results, findings; plain data only (structured clone).
import type { Behaviour, ProviderId } from './model.js';

export type Severity = 'high' | 'medium' | 'low';

/** One issue an agent found; post-processing turns findings into suggestion annotations. */
export interface Finding {
  readonly title: string;
  readonly description: string;
  readonly severity: Severity;
  readonly issueType: string;
  /** The page the finding is about. */
  readonly sourceUrl: string;
  /** Text of the page the finding anchors to (with `occurrence`, 1-based); absent for page-level findings. */
  readonly targetText?: string;
  readonly occurrence?: number;
  /** Replacement text proposed for `targetText`. */
  readonly suggestion?: string;
  /** Extra machine-readable detail (the failing link, the image src). */
  readonly detail?: Readonly<Record<string, unknown>>;
}

/** A model provider as configured (LLM_A_* / LLM_B_*); the key never leaves the process or reaches a log. */
export interface ProviderConfig {
  readonly id: ProviderId;
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey: string;
}

/** What every worker task carries besides its own input. */
export interface WorkerEnv {
  readonly allowedNetworks: readonly string[];
  readonly providers: readonly ProviderConfig[];
  readonly fetchTimeoutMs: number;
  readonly fetchMaxBytes: number;
  /** Path of a Chromium binary, or undefined when none is installed. */
  readonly chromiumPath: string | undefined;
}

export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface RunTask {
  readonly kind: 'run';
  readonly env: WorkerEnv;
  readonly url: string;
  readonly agentId: string;
  readonly behaviour: Behaviour;
  readonly userContext: Readonly<Record<string, unknown>>;
}

export interface RunResult {
  readonly findings: readonly Finding[];
  readonly usage: Usage;
  /** Which strategies gathered what (sizes, counts), for the execution record. */
  readonly context: Readonly<Record<string, unknown>>;
  readonly provider?: ProviderId;
}

export interface ValidatePromptTask {
  readonly kind: 'validate-prompt';
  readonly env: WorkerEnv;
  readonly prompt: string;
  readonly provider?: ProviderId;
  readonly userContextFields: ReadonlyArray<Readonly<Record<string, unknown>>>;
}

export interface AskAiTask {
  readonly kind: 'ask-ai';
  readonly env: WorkerEnv;
  readonly prompt: string;
  readonly text: string;
  readonly model?: string;
  readonly provider?: ProviderId;
}

/** Test hook: a task that kills its worker thread (proves a crash fails one run, not the process). */
export interface CrashTask {
  readonly kind: 'crash';
}

/** The authoring helpers of upstream 1.10 (src/agents/providers/assist.ts). */
export interface AssistTask {
  readonly kind: 'assist';
  readonly env: WorkerEnv;
  readonly op: 'resolve' | 'enhance' | 'refine' | 'extract';
  readonly input: Readonly<Record<string, unknown>>;
  readonly provider?: ProviderId;
}

export type PoolTask = RunTask | ValidatePromptTask | AskAiTask | AssistTask | CrashTask;

/** What the pool hands a worker: the task and its time limit, which the worker enforces from the moment it starts. */
export interface TimedTask {
  readonly task: PoolTask;
  readonly timeLimitMs: number;
}

/** Exit code of a worker thread that ended itself at its task's time limit. */
export const TIME_LIMIT_EXIT = 75;

/** A run that fails in the worker answers this instead of throwing, so the reason survives the thread boundary. */
export interface TaskFailure {
  readonly failed: true;
  readonly code: string;
  readonly message: string;
}

/** An error with a named code, raised by gatherers, services and providers. */
export class RunError extends Error {
  override readonly name = 'RunError';
  constructor(readonly code: string, message: string) {
    super(message);
  }
}
