// Owns agent executions: start (async, in the pool), record, cancel, get, list newest first, count, prune past retention; post-processing on completion.
import type { Database, Key } from 'lmdb';
import { randomId } from '../auth/secrets.js';
import type { CollabDocuments } from '../doc/collab-state.js';
import { AppError, failedPrecondition, invalidArgument, notFound } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB, distinctAfter, KEY_END } from '../store/keys.js';
import { NotOwnerError } from '../doc/ownership.js';
import type { AgentDefinitions } from './definitions.js';
import { stageOn } from './model.js';
import type { AgentPool, Ticket } from './pool.js';
import { applyToDocument, guardrails } from './postprocess.js';
import { RunError, type Finding, type RunResult, type WorkerEnv } from './tasks.js';

export type ExecutionStatus = 'running' | 'completed' | 'failed' | 'cancelled';

export interface ExecutionRecord {
  readonly executionId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly agentVersion: number | null;
  readonly url: string;
  readonly organizationId: string;
  readonly documentId: string;
  readonly status: ExecutionStatus;
  readonly createdAt: number;
  readonly completedAt: number | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly summary: {
    readonly findings: number;
    readonly annotationsCreated: number;
    readonly annotationsDeleted: number;
    readonly promptTokens: number;
    readonly completionTokens: number;
    readonly provider: string | null;
    readonly context: Readonly<Record<string, unknown>>;
  } | null;
  readonly results?: readonly Finding[];
  readonly annotationIds?: readonly string[];
  /** Internal, never in a reply: the process executing it (WorkerRole.processId), so recovery knows whose it is. */
  readonly node?: string;
}

export interface RunInput {
  readonly agentId: string;
  readonly url: string;
  readonly organizationId: string;
  readonly documentId: string;
  readonly userContext?: Readonly<Record<string, unknown>>;
}

/** [apiKey, createdAt, executionId] rows sort by time; the id lookup is a second key per run. */
const byTime = (apiKey: string, createdAt: number, id: string): Key => [apiKey, createdAt, id];
const byId = (apiKey: string, id: string): Key => [apiKey, '#', id];
/**
 * [0, executionId] -> [apiKey, createdAt] while a run is running: the worker's recovery reads only these. A number
 * first, so no apiKey range (list, count) ever meets them.
 */
const RUNNING = 0;
const runningKey = (id: string): Key => [RUNNING, id];
type RunningEntry = readonly [apiKey: string, createdAt: number];
/**
 * [apiKey, '%', agentId, status, createdAt, executionId] -> null for every run: `count` counts keys per agent and
 * status instead of decoding every run record (results included). A string second, so no list range meets them.
 */
const byStatus = (apiKey: string, record: Pick<ExecutionRecord, 'agentId' | 'status' | 'createdAt' | 'executionId'>): Key => [apiKey, '%', record.agentId, record.status, record.createdAt, record.executionId];
const STATUSES = ['running', 'completed', 'failed', 'cancelled'] as const;
const STATUS_INDEX_BUILT = 'runStatusIndexBuilt';
/** Runs removed per pruning transaction: bounds the write transaction and the main thread's turn. */
const PRUNE_BATCH = 1000;
type Row = ExecutionRecord | number | RunningEntry | null;
const isRecord = (value: Row | undefined): value is ExecutionRecord => typeof value === 'object' && value !== null && !Array.isArray(value);

export class AgentRuns {
  private readonly db: Database<Row, Key>;
  private readonly active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  /** Runs this process executes, from before their record is written until their outcome is: recovery skips them. */
  private readonly mine = new Set<string>();

  constructor(
    private readonly deps: {
      readonly store: Store;
      readonly definitions: AgentDefinitions;
      readonly pool: AgentPool;
      readonly collab: CollabDocuments;
      readonly env: WorkerEnv;
      readonly log: Logger;
      readonly now?: () => number;
      /** This process's id, recorded with each run it executes (default: one process, `local`). */
      readonly processId?: string;
      /** How long a settled run is kept, from its creation (`AGENT_RUN_RETENTION`); 0 or absent: forever. */
      readonly retentionMs?: number;
    },
  ) {
    this.db = deps.store.records<Row>(DB.agentExecutions);
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /**
   * Runs recorded as running whose process is gone (or which this process no longer runs: a restart) can never
   * finish: mark them failed. `alive` says whether another process still runs (in a cluster, its liveness lease); a
   * run of a live process is left alone, so a node starting never fails another node's runs. Called by the holder of
   * the worker role when it takes the role and on its periodic scan.
   */
  async recover(alive: (processId: string) => Promise<boolean> = () => Promise.resolve(false), options: { readonly full?: boolean } = {}): Promise<number> {
    const self = this.deps.processId ?? 'local';
    const running: Array<{ key: Key; node: string | undefined; executionId: string }> = [];
    // `full`: every row (when the role is taken: rows written before the running index existed); else the index.
    const rows = options.full === true ? this.db.getRange({}) : this.db.getRange({ start: [RUNNING], end: [RUNNING + 1] });
    for (const { key, value } of rows) {
      const record = Array.isArray(value) ? this.db.get(byTime(...(value as RunningEntry), String((key as Key[])[1]))) : value;
      if (isRecord(record) && record.status === 'running') running.push({ key: byTime(apiKeyOf(key, value), record.createdAt, record.executionId), node: record.node, executionId: record.executionId });
    }
    const liveness = new Map<string, Promise<boolean>>();
    const stale: typeof running = [];
    for (const run of running) {
      if (run.node === self ? this.mine.has(run.executionId) : run.node !== undefined && (await memo(liveness, run.node, alive))) continue;
      stale.push(run);
    }
    if (stale.length === 0) return 0;
    let count = 0;
    await this.deps.store.transaction(() => {
      for (const { key } of stale) {
        const value = this.db.get(key);
        // Read again inside the transaction: it may have finished meanwhile.
        if (!isRecord(value) || value.status !== 'running') continue;
        if (value.node === self && this.mine.has(value.executionId)) continue;
        this.settle(apiKeyOf(key, value), value, { ...value, status: 'failed', completedAt: this.now(), error: { code: 'INTERRUPTED', message: 'the server running it stopped during the run' } });
        count++;
      }
    });
    if (count > 0) this.deps.log.warn('interrupted agent runs marked failed', { count, nodes: [...new Set(stale.map((run) => run.node ?? 'unknown'))] });
    return count;
  }

  /** Starts a run: checks, records it (committed before answering), queues it in the pool; the work goes on after. */
  async start(apiKey: string, input: RunInput): Promise<{ executionId: string }> {
    const agent = this.deps.definitions.runnable(apiKey, input.agentId);
    if (!agent.identity.enabled) throw failedPrecondition(`agent ${input.agentId} is disabled`);
    if (!URL.canParse(input.url) || !/^https?:$/.test(new URL(input.url).protocol)) throw invalidArgument('data.url must be an http(s) URL');
    // The pool place is taken before the record is written, so a refusal (queue or this key's share full) records nothing
    // and the run cannot be refused later, between its record and its queueing.
    const ticket = this.deps.pool.admit(apiKey);
    const executionId = randomId(24);
    const createdAt = this.now();
    const record: ExecutionRecord = {
      executionId,
      agentId: input.agentId,
      agentName: agent.identity.name,
      agentVersion: agent.identity.version ?? null,
      url: input.url,
      organizationId: input.organizationId,
      documentId: input.documentId,
      status: 'running',
      createdAt,
      completedAt: null,
      error: null,
      summary: null,
      node: this.deps.processId ?? 'local',
    };
    this.mine.add(executionId);
    try {
      // The run count goes with the record: counted apart, a count that failed after the record committed left a run
      // `running` that nothing executed until recovery failed it. Both are written or neither (the call answers the error).
      await this.deps.store.transaction((tx) => {
        this.db.putSync(byTime(apiKey, createdAt, executionId), record);
        this.db.putSync(byId(apiKey, executionId), createdAt);
        this.db.putSync(runningKey(executionId), [apiKey, createdAt]);
        this.db.putSync(byStatus(apiKey, record), null);
        this.deps.definitions.countRun(tx, apiKey, input.agentId, createdAt);
      });
    } catch (error) {
      this.mine.delete(executionId);
      ticket.release();
      throw error;
    }
    const controller = new AbortController();
    const done = this.execute(ticket, record, agent.behaviour, input.userContext ?? {}, controller.signal)
      .catch((error: unknown) => this.deps.log.error('agent run bookkeeping failed', { executionId, error }))
      .finally(() => {
        this.active.delete(executionId);
        this.mine.delete(executionId);
      });
    this.active.set(executionId, { controller, done });
    return { executionId };
  }

  private async execute(ticket: Ticket, record: ExecutionRecord, behaviour: ReturnType<AgentDefinitions['runnable']>['behaviour'], userContext: Readonly<Record<string, unknown>>, signal: AbortSignal): Promise<void> {
    const apiKey = ticket.apiKey;
    const ref = { apiKey, organizationId: record.organizationId, documentId: record.documentId };
    try {
      const result = await this.deps.pool.run<RunResult>(ticket, { kind: 'run', env: this.deps.env, url: record.url, agentId: record.agentId, behaviour, userContext }, signal);
      const findings = stageOn(behaviour.postProcess?.guardrails) ? guardrails(result.findings) : [...result.findings];
      const applied = await applyToDocument(this.deps.collab, ref, { agentId: record.agentId, agentName: record.agentName, executionId: record.executionId, url: record.url }, findings, behaviour.postProcess);
      const tokens = stageOn(behaviour.postProcess?.analytics) ? { prompt: result.usage.promptTokens, completion: result.usage.completionTokens } : undefined;
      await this.finish(apiKey, record, {
        status: 'completed',
        error: null,
        results: findings,
        annotationIds: applied.created,
        summary: {
          findings: findings.length,
          annotationsCreated: applied.created.length,
          annotationsDeleted: applied.deleted,
          promptTokens: result.usage.promptTokens,
          completionTokens: result.usage.completionTokens,
          provider: result.provider ?? null,
          context: result.context,
        },
      }, tokens);
    } catch (error) {
      const code = error instanceof RunError ? error.code : error instanceof AppError ? error.status : 'INTERNAL';
      const message = error instanceof Error && (error instanceof RunError || error instanceof AppError) ? error.message : 'internal error';
      if (!(error instanceof RunError)) this.deps.log.error('agent run failed', { executionId: record.executionId, error });
      await this.finish(apiKey, record, { status: code === 'CANCELLED' ? 'cancelled' : 'failed', error: { code, message }, summary: null });
    }
  }

  /** The final record, and the tokens it used (analytics) in the same transaction: the statistics never count a run the record does not show. */
  private async finish(apiKey: string, record: ExecutionRecord, outcome: Pick<ExecutionRecord, 'status' | 'error' | 'summary'> & Partial<ExecutionRecord>, tokens?: { prompt: number; completion: number }): Promise<void> {
    await this.deps.store.transaction((tx) => {
      this.settle(apiKey, record, { ...record, ...outcome, completedAt: this.now() });
      if (tokens !== undefined) this.deps.definitions.countRun(tx, apiKey, record.agentId, record.createdAt, tokens);
    });
  }

  /** Inside a transaction: a running run's final record, its status key moved, its running entry gone. */
  private settle(apiKey: string, running: ExecutionRecord, settled: ExecutionRecord): void {
    this.db.putSync(byTime(apiKey, running.createdAt, running.executionId), settled);
    this.db.removeSync(runningKey(running.executionId));
    this.db.removeSync(byStatus(apiKey, running));
    this.db.putSync(byStatus(apiKey, settled), null);
  }

  private record(apiKey: string, executionId: string): ExecutionRecord {
    const createdAt = this.db.get(byId(apiKey, executionId));
    const record = typeof createdAt === 'number' ? this.db.get(byTime(apiKey, createdAt, executionId)) : undefined;
    if (!isRecord(record)) throw notFound(`execution ${executionId} not found`);
    return record;
  }

  get(apiKey: string, executionId: string, includeResults: boolean): ExecutionRecord {
    const { node: _node, ...record } = this.record(apiKey, executionId);
    if (includeResults) return record;
    const { results: _results, ...rest } = record;
    return rest;
  }

  /** Cancels a running execution (its worker thread is ended); a finished one answers FAILED_PRECONDITION. */
  async cancel(apiKey: string, executionId: string): Promise<ExecutionRecord> {
    const record = this.record(apiKey, executionId);
    const active = this.active.get(executionId);
    // Running in another node's pool (a cluster): the route forwards the cancel to that node, which can end it.
    if (record.status === 'running' && active === undefined && record.node !== undefined && record.node !== (this.deps.processId ?? 'local')) throw new NotOwnerError(record.node);
    if (record.status !== 'running' || active === undefined) throw failedPrecondition(`execution ${executionId} is ${record.status}, not running`);
    active.controller.abort();
    await active.done;
    return this.get(apiKey, executionId, false);
  }

  /** Newest first; `pageToken` is the last row's (createdAt, id) of the previous page. */
  list(apiKey: string, options: { pageSize: number; pageToken?: string; agentId?: string; status?: ExecutionStatus }): { executions: ExecutionRecord[]; pageToken?: string } {
    let start: Key = [apiKey, Number.MAX_SAFE_INTEGER];
    let after: string | undefined;
    if (options.pageToken !== undefined) {
      const decoded = decodeToken(options.pageToken);
      start = byTime(apiKey, decoded.createdAt, decoded.id);
      after = decoded.id;
    }
    const executions: ExecutionRecord[] = [];
    let more = false;
    for (const { value } of this.db.getRange({ start, end: [apiKey, 0], reverse: true })) {
      if (!isRecord(value)) continue;
      if (after !== undefined && value.executionId === after) continue;
      if (options.agentId !== undefined && value.agentId !== options.agentId) continue;
      if (options.status !== undefined && value.status !== options.status) continue;
      if (executions.length === options.pageSize) {
        more = true;
        break;
      }
      const { results: _results, node: _node, ...row } = value;
      executions.push(row);
    }
    const last = executions.at(-1);
    return more && last !== undefined ? { executions, pageToken: encodeToken(last.createdAt, last.executionId) } : { executions };
  }

  /** Runs by status and by agent, counted on the status keys (no run record is read). */
  count(apiKey: string, agentId: string | undefined): { total: number; byStatus: Record<string, number>; byAgent: Record<string, number> } {
    const byStatusCount: Record<string, number> = { running: 0, completed: 0, failed: 0, cancelled: 0 };
    const byAgent: Record<string, number> = {};
    let total = 0;
    for (const agent of agentId === undefined ? distinctAfter(this.db, [apiKey, '%']) : [agentId]) {
      for (const status of STATUSES) {
        const n = this.db.getKeysCount({ start: [apiKey, '%', agent, status], end: [apiKey, '%', agent, status, KEY_END] });
        if (n === 0) continue;
        total += n;
        byStatusCount[status] = (byStatusCount[status] ?? 0) + n;
        byAgent[agent] = (byAgent[agent] ?? 0) + n;
      }
    }
    return { total, byStatus: byStatusCount, byAgent };
  }

  /** Writes the status keys of the runs recorded before they existed (schema 3 and older), once (`Store.backfillOnce`). */
  buildStatusIndex(): Promise<number> {
    return this.deps.store.backfillOnce(STATUS_INDEX_BUILT, () => {
      let indexed = 0;
      for (const { key, value } of this.db.getRange({})) {
        if (!isRecord(value) || typeof (key as Key[])[1] !== 'number') continue;
        this.db.putSync(byStatus(String((key as Key[])[0]), value), null);
        indexed++;
      }
      return indexed;
    });
  }

  /**
   * Removes the settled runs (completed, failed, cancelled) past their retention, with their id and status keys,
   * across every API key, in batches of `batch` runs, one transaction each, until a batch comes back short; a run still
   * running stays until it settles (recovery settles one whose process is gone). Answers how many went. The holder of
   * the worker role calls it hourly (src/background-work.ts); the agents' statistics (`executionCount`) keep counting.
   */
  async prune(batch = PRUNE_BATCH): Promise<number> {
    const retentionMs = this.deps.retentionMs ?? 0;
    if (retentionMs === 0) return 0;
    const before = this.now() - retentionMs;
    let removed = 0;
    for (;;) {
      const n = await this.deps.store.transaction(() => this.removeSettledBefore(before, batch));
      removed += n;
      if (n < batch) return removed;
    }
  }

  /** Inside a transaction: at most `limit` settled runs created before `before`, oldest first per API key. */
  private removeSettledBefore(before: number, limit: number): number {
    let removed = 0;
    for (const apiKey of distinctAfter(this.db, [], '')) {
      // Read first, then remove: the range is not walked while it changes.
      const expired = Array.from(this.db.getRange({ start: [apiKey, 0], end: [apiKey, before] }));
      for (const { key, value } of expired) {
        if (removed >= limit) return removed;
        if (!isRecord(value) || value.status === 'running') continue;
        this.db.removeSync(key);
        this.db.removeSync(byId(apiKey, value.executionId));
        this.db.removeSync(byStatus(apiKey, value));
        removed++;
      }
    }
    return removed;
  }

  /** Cancels what is running and waits for it to be recorded (server stop). */
  async close(): Promise<void> {
    for (const { controller } of this.active.values()) controller.abort();
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
  }

  /** Resolves when every run started so far has been recorded (tests). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
  }

  /** Resolves when `executionId` has finished and been recorded. */
  async finished(executionId: string): Promise<void> {
    await this.active.get(executionId)?.done;
  }
}

/** The apiKey of a row read in recovery: the index entry's value, or the record's own key. */
function apiKeyOf(key: Key, value: Row): string {
  return Array.isArray(value) ? String(value[0]) : String((key as Key[])[0]);
}

/** One liveness question per process per recovery pass. */
function memo(cache: Map<string, Promise<boolean>>, processId: string, alive: (processId: string) => Promise<boolean>): Promise<boolean> {
  let answer = cache.get(processId);
  if (answer === undefined) cache.set(processId, (answer = alive(processId)));
  return answer;
}

function encodeToken(createdAt: number, id: string): string {
  return Buffer.from(JSON.stringify([createdAt, id])).toString('base64url');
}

function decodeToken(token: string): { createdAt: number; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof createdAt === 'number' && typeof id === 'string') return { createdAt, id };
  } catch (error) {
    throw invalidArgument(`data.pageToken is not a token this server issued (${(error as Error).message})`);
  }
  throw invalidArgument('data.pageToken is not a token this server issued');
}
