// Owns custom agent definitions in LMDB: identity rows, behaviour versions (secrets sealed), run statistics.
import type { Database, Key } from 'lmdb';
import { randomId, type Secrets } from '../auth/secrets.js';
import { AppError, invalidArgument, notFound } from '../errors.js';
import type { Store, WriteTx } from '../store/env.js';
import { DB } from '../store/keys.js';
import { BUILT_IN_AGENTS, builtInAgent } from './catalog.js';
import type { AgentIdentity, AgentRecord, Behaviour, VersionRecord } from './model.js';
import { openSecrets, redactSecrets, sealSecrets } from './secrets.js';
import type { AgentVersionCounter } from './version-counter.js';
import { behaviourOf, checkBehaviour } from './validation.js';

export interface AgentStats {
  readonly executionCount: number;
  readonly lastExecutedAt: number | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export const NO_STATS: AgentStats = { executionCount: 0, lastExecutedAt: null, promptTokens: 0, completionTokens: 0 };

export interface IdentityInput {
  readonly name?: string;
  readonly description?: string;
  readonly enabled?: boolean;
}

export type ListFilter = 'defaultOnly' | 'customOnly';

/** An agent ready to run: identity plus behaviour with plaintext secrets. */
export interface RunnableAgent {
  readonly identity: AgentIdentity;
  readonly behaviour: Behaviour;
}

const identityOf = (record: AgentRecord): AgentIdentity => ({
  id: record.id,
  name: record.name,
  description: record.description,
  enabled: record.enabled,
  managedBy: 'customer',
  system: false,
  version: record.version,
});

export class AgentDefinitions {
  private readonly agents: Database<AgentRecord, Key>;
  private readonly versions: Database<VersionRecord, Key>;
  private readonly stats: Database<AgentStats, Key>;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly now: () => number = Date.now,
    /** Cluster mode: version numbers from a counter shared by every node; absent: `latestVersion + 1` in the transaction. */
    private readonly counter?: AgentVersionCounter,
  ) {
    this.agents = store.records<AgentRecord>(DB.agents);
    this.versions = store.records<VersionRecord>(DB.agentVersions);
    this.stats = store.records<AgentStats>(DB.agentStats);
  }

  /** Create Agent (spec 4.20): writes the identity row and version 1 together. */
  async create(apiKey: string, data: Readonly<Record<string, unknown>> & Required<IdentityInput>): Promise<{ agentId: string; version: number }> {
    const behaviour = behaviourOf(data) as Behaviour;
    checkBehaviour(behaviour);
    const sealed = sealSecrets(behaviour, undefined, this.secrets);
    const id = randomId(20);
    const now = this.now();
    const record: AgentRecord = { id, name: data.name, description: data.description, enabled: data.enabled, version: 1, latestVersion: 1, createdAt: now, updatedAt: now };
    await this.store.transaction(() => {
      this.agents.putSync([apiKey, id], record);
      this.versions.putSync([apiKey, id, 1], { version: 1, behaviour: sealed, createdAt: now });
    });
    return { agentId: id, version: 1 };
  }

  exists(apiKey: string, agentId: string): boolean {
    return builtInAgent(agentId) !== undefined || this.agents.get([apiKey, agentId]) !== undefined;
  }

  private record(apiKey: string, agentId: string): AgentRecord {
    const record = this.agents.get([apiKey, agentId]);
    if (record === undefined) throw notFound(`agent ${agentId} not found`);
    return record;
  }

  private version(apiKey: string, agentId: string, version: number): VersionRecord {
    const found = this.versions.get([apiKey, agentId, version]);
    if (found === undefined) throw notFound(`version ${version} of agent ${agentId} not found`);
    return found;
  }

  /** Get Agent (spec 4.14, single): a built-in answers identity only; a custom agent merges its version's behaviour. */
  get(apiKey: string, agentId: string): Record<string, unknown> {
    const builtIn = builtInAgent(agentId);
    if (builtIn !== undefined) return { ...builtIn.identity };
    const record = this.record(apiKey, agentId);
    const behaviour = redactSecrets(this.version(apiKey, agentId, record.version).behaviour);
    return { ...behaviour, ...identityOf(record), createdAt: record.createdAt, updatedAt: record.updatedAt };
  }

  /** Get Agents (spec 4.14, list): identity rows with run statistics; built-ins first, then custom by creation. */
  list(apiKey: string, filter: ListFilter | undefined): Array<AgentIdentity & { executionCount: number; lastExecutedAt: number | null }> {
    const rows: AgentIdentity[] = [];
    if (filter !== 'customOnly') rows.push(...BUILT_IN_AGENTS.map((agent) => agent.identity));
    if (filter !== 'defaultOnly') {
      const custom = Array.from(this.agents.getRange({ start: [apiKey], end: [apiKey, '\uffff'] }), ({ value }) => value);
      custom.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
      rows.push(...custom.map(identityOf));
    }
    return rows.map((identity) => {
      const stats = this.statsOf(apiKey, identity.id);
      return { ...identity, executionCount: stats.executionCount, lastExecutedAt: stats.lastExecutedAt };
    });
  }

  /** Update Agent: identity fields only, no new version. */
  async updateIdentity(apiKey: string, agentId: string, input: IdentityInput): Promise<AgentIdentity> {
    if (builtInAgent(agentId) !== undefined) throw invalidArgument(`agent ${agentId} is built in and cannot be changed`);
    if (input.name === undefined && input.description === undefined && input.enabled === undefined) {
      throw invalidArgument('data needs at least one of name, description, enabled besides agentId');
    }
    return this.store.transaction(() => {
      const record = this.record(apiKey, agentId);
      const next: AgentRecord = { ...record, ...definedOf(input), updatedAt: this.now() };
      this.agents.putSync([apiKey, agentId], next);
      return identityOf(next);
    });
  }

  /**
   * Update Agent Version: the sent behavioural fields replace the current version's fields of the same name (each
   * top-level field whole), the result is checked as a whole and written as version N+1, which becomes current.
   */
  async updateBehaviour(apiKey: string, agentId: string, data: Readonly<Record<string, unknown>>): Promise<{ agentId: string; version: number }> {
    if (builtInAgent(agentId) !== undefined) throw invalidArgument(`agent ${agentId} is built in and cannot be changed`);
    const changes = behaviourOf(data);
    if (Object.keys(changes).length === 0) throw invalidArgument('data needs at least one behavioural field besides agentId');
    const record = this.record(apiKey, agentId);
    const current = this.version(apiKey, agentId, record.version).behaviour;
    const merged = { ...current, ...changes } as Behaviour;
    checkBehaviour(merged);
    const sealed = sealSecrets(merged, current, this.secrets);
    return this.writeVersion(apiKey, agentId, record.version, sealed, undefined);
  }

  /** Restore Version: writes a copy of `version` (default: the one before the current) as version N+1. */
  async restore(apiKey: string, agentId: string, version: number | undefined): Promise<{ agentId: string; version: number; restoredFrom: number }> {
    if (builtInAgent(agentId) !== undefined) throw invalidArgument(`agent ${agentId} is built in and has no versions`);
    const record = this.record(apiKey, agentId);
    const from = version ?? record.version - 1;
    if (from < 1) throw invalidArgument(`agent ${agentId} is at version ${record.version}; there is no earlier version to restore`);
    if (from === record.version) throw invalidArgument(`version ${from} is already the current version`);
    const source = this.version(apiKey, agentId, from);
    const written = await this.writeVersion(apiKey, agentId, record.version, source.behaviour, from);
    return { ...written, restoredFrom: from };
  }

  private async writeVersion(apiKey: string, agentId: string, expected: number, behaviour: Behaviour, restoredFrom: number | undefined): Promise<{ agentId: string; version: number }> {
    const allocated = this.counter === undefined ? undefined : await this.counter.next(apiKey, agentId, this.record(apiKey, agentId).latestVersion);
    return this.store.transaction(() => {
      const record = this.record(apiKey, agentId);
      // Two updates raced: the second was checked against a version that is no longer current.
      if (record.version !== expected) throw new AppError('ABORTED', `agent ${agentId} was changed by another request; fetch it and retry`);
      // The cluster's number is handed out once: used as it is (a number derived from this cache could be another node's next).
      const version = allocated ?? record.latestVersion + 1;
      const now = this.now();
      this.versions.putSync([apiKey, agentId, version], { version, behaviour, createdAt: now, ...(restoredFrom === undefined ? {} : { restoredFrom }) });
      this.agents.putSync([apiKey, agentId], { ...record, version, latestVersion: Math.max(version, record.latestVersion), updatedAt: now });
      return { agentId, version };
    });
  }

  /** Versions newest first, behaviour redacted. */
  listVersions(apiKey: string, agentId: string): Array<Record<string, unknown>> {
    if (builtInAgent(agentId) !== undefined) throw invalidArgument(`agent ${agentId} is built in and has no versions`);
    const record = this.record(apiKey, agentId);
    const rows = Array.from(this.versions.getRange({ start: [apiKey, agentId], end: [apiKey, agentId, Number.MAX_SAFE_INTEGER] }), ({ value }) => value);
    return rows.reverse().map((row) => ({
      version: row.version,
      current: row.version === record.version,
      createdAt: row.createdAt,
      ...(row.restoredFrom === undefined ? {} : { restoredFrom: row.restoredFrom }),
      behaviour: redactSecrets(row.behaviour),
    }));
  }

  /** Delete Agent: the identity row, every version and the statistics. */
  async delete(apiKey: string, agentId: string): Promise<void> {
    if (builtInAgent(agentId) !== undefined) throw invalidArgument(`agent ${agentId} is built in and cannot be deleted`);
    await this.store.transaction(() => {
      this.record(apiKey, agentId);
      this.agents.removeSync([apiKey, agentId]);
      for (const key of this.versions.getKeys({ start: [apiKey, agentId], end: [apiKey, agentId, Number.MAX_SAFE_INTEGER] })) this.versions.removeSync(key);
      this.stats.removeSync([apiKey, agentId]);
    });
  }

  /** The agent as a run needs it: the current behaviour with secrets opened. */
  runnable(apiKey: string, agentId: string): RunnableAgent {
    const builtIn = builtInAgent(agentId);
    if (builtIn !== undefined) return builtIn;
    const record = this.record(apiKey, agentId);
    return { identity: identityOf(record), behaviour: openSecrets(this.version(apiKey, agentId, record.version).behaviour, this.secrets) };
  }

  statsOf(apiKey: string, agentId: string): AgentStats {
    return this.stats.get([apiKey, agentId]) ?? NO_STATS;
  }

  /**
   * In the transaction that writes the run's record (src/agents/runs.ts): counts a run when it starts; tokens are added
   * when it ends. One write with the record, so a run is never recorded without its count, nor counted without a record.
   */
  countRun(_tx: WriteTx, apiKey: string, agentId: string, at: number, tokens?: { prompt: number; completion: number }): void {
    const stats = this.statsOf(apiKey, agentId);
    this.stats.putSync([apiKey, agentId], {
      executionCount: stats.executionCount + (tokens === undefined ? 1 : 0),
      lastExecutedAt: tokens === undefined ? at : stats.lastExecutedAt,
      promptTokens: stats.promptTokens + (tokens?.prompt ?? 0),
      completionTokens: stats.completionTokens + (tokens?.completion ?? 0),
    });
  }
}

function definedOf(input: IdentityInput): IdentityInput {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) as IdentityInput;
}
