// Owns the approval-drift statistic: recent approval rate against its baseline, a two-proportion z-test, severities.

export interface AlertConfig {
  /** false: decisions are still recorded, no alert is raised. */
  readonly enabled: boolean;
  /** Decisions in the recent window (the newest ones). */
  readonly recentWindow: number;
  /** At most this many decisions before the recent window form the baseline. */
  readonly baselineWindow: number;
  /** No verdict until the baseline holds at least this many decisions. */
  readonly minBaselineDecisions: number;
  /** Smallest drop in approval rate (baseline - recent, 0..1) that is a drift. */
  readonly minDrop: number;
  /** z of the two-proportion test a drop must reach (1.96: about 95 % one-sided confidence it is not chance). */
  readonly minZ: number;
  /** Drop at or above which the alert is `high`; at or above `medium`, `medium`; else `low`. */
  readonly highDrop: number;
  readonly mediumDrop: number;
}

export const DEFAULT_ALERT_CONFIG: AlertConfig = {
  enabled: true,
  recentWindow: 10,
  baselineWindow: 50,
  minBaselineDecisions: 10,
  minDrop: 0.2,
  minZ: 1.96,
  highDrop: 0.5,
  mediumDrop: 0.3,
};

export interface Verdict {
  readonly drift: boolean;
  readonly baseline: number;
  readonly current: number;
  readonly drop: number;
  readonly z: number;
  readonly baselineDecisions: number;
  readonly recentDecisions: number;
  readonly severity: 'high' | 'medium' | 'low';
}

/**
 * `approvals` is oldest first (true = accepted). The newest `recentWindow` form the recent rate, up to
 * `baselineWindow` before them the baseline. Drift when the baseline is big enough, the drop reaches `minDrop` and the
 * pooled two-proportion z = (p_b - p_r) / sqrt(p (1 - p) (1/n_b + 1/n_r)) reaches `minZ`.
 */
export function assess(approvals: readonly boolean[], config: AlertConfig): Verdict | undefined {
  if (approvals.length < config.recentWindow + config.minBaselineDecisions) return undefined;
  const recent = approvals.slice(-config.recentWindow);
  const baseline = approvals.slice(Math.max(0, approvals.length - config.recentWindow - config.baselineWindow), approvals.length - config.recentWindow);
  const rate = (xs: readonly boolean[]): number => xs.filter(Boolean).length / xs.length;
  const pb = rate(baseline);
  const pr = rate(recent);
  const pooled = (pb * baseline.length + pr * recent.length) / (baseline.length + recent.length);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / baseline.length + 1 / recent.length));
  const drop = pb - pr;
  const z = se === 0 ? (drop > 0 ? Number.POSITIVE_INFINITY : 0) : drop / se;
  const severity = drop >= config.highDrop ? 'high' : drop >= config.mediumDrop ? 'medium' : 'low';
  return {
    drift: drop >= config.minDrop && z >= config.minZ,
    baseline: round(pb),
    current: round(pr),
    drop: round(drop),
    z: Number.isFinite(z) ? round(z) : 99,
    baselineDecisions: baseline.length,
    recentDecisions: recent.length,
    severity,
  };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;
