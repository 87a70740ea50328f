// Owns Memory alerts: suggestion decisions recorded per agent, the drift detector's alerts (one per drift), list/dismiss/action, config.
import type { Database, Key } from 'lmdb';
import { randomId } from '../../auth/secrets.js';
import type { LiveAnnotationChange } from '../../doc/annotations/state.js';
import type { DocumentKey } from '../../document-key.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Store } from '../../store/env.js';
import { DB } from '../../store/keys.js';
import { assess, DEFAULT_ALERT_CONFIG, type AlertConfig } from './drift.js';

export interface Decision {
  readonly annotationId: string;
  readonly organizationId: string;
  readonly documentId: string;
  readonly accepted: boolean;
  readonly decidedAt: number;
}

export interface Alert {
  readonly id: string;
  readonly apiKey: string;
  readonly alertType: 'approval_rate_drift';
  readonly severity: 'high' | 'medium' | 'low';
  readonly title: string;
  readonly description: string;
  readonly evidence: Readonly<Record<string, unknown>>;
  readonly suggestedAction: string;
  readonly actionUrl: string | null;
  readonly status: 'active' | 'dismissed' | 'actioned';
  readonly createdAt: number;
  readonly dismissedAt: number | null;
  readonly dismissedBy: string | null;
  readonly actionedAt?: number;
  readonly dedupKey: string;
  readonly agentId: string;
}

/** Per agent: whether it is in a drift now, and how many drifts it had (the dedupKey's episode number). */
interface DriftState {
  readonly inDrift: boolean;
  readonly episode: number;
}

export const LIST_LIMIT = 50;

export class Memory {
  private readonly decisions: Database<Decision | boolean, Key>;
  private readonly alerts: Database<Alert | string | number | DriftState, Key>;
  private readonly configs: Database<AlertConfig, Key>;
  /** Decision writes in flight (tests await them). */
  private pending: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: Store, private readonly log: Logger, private readonly now: () => number = Date.now) {
    this.decisions = store.records<Decision | boolean>(DB.memoryDecisions);
    this.alerts = store.records<Alert | string | number | DriftState>(DB.memoryAlerts);
    this.configs = store.records<AlertConfig>(DB.memoryConfig);
  }

  /** The listener for CollabDocuments.onAnnotationsCommitted: picks accepted/rejected suggestions written by an agent. */
  observe(ref: DocumentKey, changes: readonly LiveAnnotationChange[]): void {
    for (const change of changes) {
      if (change.op !== 'upsert' || change.annotation.type !== 'suggestion') continue;
      const agentId = change.annotation.context?.['agentId'];
      const status = change.annotation.suggestion?.status;
      if (typeof agentId !== 'string' || (status !== 'accepted' && status !== 'rejected')) continue;
      const decision: Decision = { annotationId: change.annotation.annotationId, organizationId: ref.organizationId, documentId: ref.documentId, accepted: status === 'accepted', decidedAt: this.now() };
      this.pending = this.pending
        .then(() => this.record(ref.apiKey, agentId, decision))
        .catch((error: unknown) => this.log.error('memory: recording a decision failed', { error, agentId }));
    }
  }

  /** Resolves when every decision observed so far is recorded and assessed. */
  settled(): Promise<unknown> {
    return this.pending;
  }

  /** Records one decision (a repeat of the same verdict on the same suggestion is ignored), then runs the detector. */
  async record(apiKey: string, agentId: string, decision: Decision): Promise<void> {
    await this.store.transaction(() => {
      const seenKey = [apiKey, '#decided', agentId, decision.annotationId];
      if (this.decisions.get(seenKey) === decision.accepted) return;
      this.decisions.putSync(seenKey, decision.accepted);
      this.decisions.putSync([apiKey, agentId, decision.decidedAt, decision.annotationId], decision);
      this.detect(apiKey, agentId);
    });
  }

  /** Inside the decision's transaction: assess the agent and raise at most one alert per drift episode. */
  private detect(apiKey: string, agentId: string): void {
    const config = this.config(apiKey);
    const take = config.recentWindow + config.baselineWindow;
    const newestFirst: boolean[] = [];
    for (const { value } of this.decisions.getRange({ start: [apiKey, agentId, Number.MAX_SAFE_INTEGER], end: [apiKey, agentId, 0], reverse: true, limit: take })) {
      if (typeof value !== 'boolean') newestFirst.push(value.accepted);
    }
    const verdict = assess(newestFirst.reverse(), config);
    const stateKey = [apiKey, '#drift', agentId];
    const state = (this.alerts.get(stateKey) as DriftState | undefined) ?? { inDrift: false, episode: 0 };
    if (verdict === undefined || !verdict.drift) {
      if (state.inDrift) this.alerts.putSync(stateKey, { ...state, inDrift: false });
      return;
    }
    if (state.inDrift || !config.enabled) return;
    const episode = state.episode + 1;
    this.alerts.putSync(stateKey, { inDrift: true, episode });
    const dedupKey = `approval_rate_drift:${agentId}:${episode}`;
    if (this.alerts.get([apiKey, '#dedup', dedupKey]) !== undefined) return;
    const pct = (x: number): string => `${Math.round(x * 100)}%`;
    const alert: Alert = {
      id: randomId(20),
      apiKey,
      agentId,
      alertType: 'approval_rate_drift',
      severity: verdict.severity,
      title: `Approval rate of agent ${agentId} dropped from ${pct(verdict.baseline)} to ${pct(verdict.current)}`,
      description: `Reviewers accepted ${pct(verdict.current)} of the last ${verdict.recentDecisions} suggestions of agent ${agentId}, against ${pct(verdict.baseline)} of the ${verdict.baselineDecisions} before them (z = ${verdict.z}).`,
      evidence: { metric: 'approval_rate', baseline: verdict.baseline, current: verdict.current, window: { recent: verdict.recentDecisions, baseline: verdict.baselineDecisions }, drop: verdict.drop, z: verdict.z },
      suggestedAction: 'Review the agent\'s recent suggestions and its instructions; restore an earlier version if a change caused it.',
      actionUrl: null,
      status: 'active',
      createdAt: this.now(),
      dismissedAt: null,
      dismissedBy: null,
      dedupKey,
    };
    this.alerts.putSync([apiKey, alert.createdAt, alert.id], alert);
    this.alerts.putSync([apiKey, '#id', alert.id], alert.createdAt);
    this.alerts.putSync([apiKey, '#dedup', dedupKey], alert.id);
    this.log.info('memory: approval drift alert raised', { agentId, severity: alert.severity, dedupKey });
  }

  /** Active alerts, newest first, at most 50 (spec 4.6). */
  list(apiKey: string): Alert[] {
    const out: Alert[] = [];
    for (const { value } of this.alerts.getRange({ start: [apiKey, Number.MAX_SAFE_INTEGER], end: [apiKey, 0], reverse: true })) {
      if (typeof value === 'object' && 'status' in value && value.status === 'active') out.push(value);
      if (out.length === LIST_LIMIT) break;
    }
    return out;
  }

  /** Upstream answers an unknown alertId with INTERNAL (upstream notes 1.11); so does Plait, naming the id. */
  private change(apiKey: string, alertId: string, edit: (alert: Alert) => Alert): Promise<void> {
    return this.store.transaction(() => {
      const createdAt = this.alerts.get([apiKey, '#id', alertId]);
      const alert = typeof createdAt === 'number' ? this.alerts.get([apiKey, createdAt, alertId]) : undefined;
      if (alert === undefined || typeof alert !== 'object' || !('status' in alert)) throw new AppError('INTERNAL', `alert ${alertId} not found`);
      this.alerts.putSync([apiKey, alert.createdAt, alertId], edit(alert));
    });
  }

  dismiss(apiKey: string, alertId: string, user: string | undefined): Promise<void> {
    return this.change(apiKey, alertId, (alert) => ({ ...alert, status: 'dismissed', dismissedAt: this.now(), dismissedBy: user ?? null }));
  }

  action(apiKey: string, alertId: string): Promise<void> {
    return this.change(apiKey, alertId, (alert) => ({ ...alert, status: 'actioned', actionedAt: this.now() }));
  }

  config(apiKey: string): AlertConfig {
    return { ...DEFAULT_ALERT_CONFIG, ...(this.configs.get([apiKey]) ?? {}) };
  }

  async updateConfig(apiKey: string, update: Partial<AlertConfig>): Promise<AlertConfig> {
    const next = { ...this.config(apiKey), ...update };
    if (next.mediumDrop > next.highDrop) throw new AppError('INVALID_ARGUMENT', 'data.mediumDrop must not exceed data.highDrop');
    await this.store.transaction(() => this.configs.putSync([apiKey], next));
    return next;
  }
}
