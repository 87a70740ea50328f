// Owns agent version numbers in a cluster: one compare-and-set counter per custom agent in the JetStream KV bucket plait_counters.
import type { KV, NatsConnection } from 'nats';
import type { AgentVersionCounter } from '../agents/version-counter.js';
import { AppError, unavailable } from '../errors.js';
import type { Logger } from '../log.js';

export const COUNTER_BUCKET = 'plait_counters';

/** Compare-and-set rounds before giving up (each lost round means another node took a number meanwhile). */
const MAX_ROUNDS = 16;

/**
 * The next version of an agent is max(counter, the caller's latest) + 1, written with compare-and-set on the revision
 * read (create when absent): of nodes racing, one write wins each round and the others read again, so each number is
 * handed out once. The caller's `latest` covers agents whose versions were written before the counter existed.
 */
export class KvAgentVersions implements AgentVersionCounter {
  private constructor(private readonly kv: KV, private readonly log: Pick<Logger, 'warn'>) {}

  static async open(nc: NatsConnection, options: { readonly replicas?: number; readonly log: Pick<Logger, 'warn'> }): Promise<KvAgentVersions> {
    const kv = await nc.jetstream().views.kv(COUNTER_BUCKET, { history: 1, replicas: options.replicas ?? 1 });
    return new KvAgentVersions(kv, options.log);
  }

  async next(apiKey: string, agentId: string, latest: number): Promise<number> {
    const key = `agent-version.${Buffer.from(JSON.stringify([apiKey, agentId]), 'utf8').toString('base64url')}`;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      try {
        const entry = await this.kv.get(key);
        const current = entry === null || entry.operation !== 'PUT' ? 0 : Number(entry.string());
        const next = Math.max(Number.isSafeInteger(current) ? current : 0, latest) + 1;
        if (entry === null) await this.kv.create(key, String(next));
        else await this.kv.update(key, String(next), entry.revision);
        return next;
      } catch (error) {
        if (isConflict(error)) continue;
        this.log.warn('agent version counter unreachable', { error: String(error) });
        throw unavailable('the cluster coordinator (NATS) is unreachable; the agent was not changed, retry shortly');
      }
    }
    throw new AppError('ABORTED', `agent ${agentId} is being changed by other requests at the same time; fetch it and retry`);
  }
}

/** JetStream's "wrong last sequence" (create on an existing key, update on a moved revision). */
function isConflict(error: unknown): boolean {
  const text = error instanceof Error ? error.message : String(error);
  return /wrong last sequence|key exists|10071/.test(text) || (typeof error === 'object' && error !== null && 'api_error' in error && (error as { api_error?: { err_code?: number } }).api_error?.err_code === 10071);
}
