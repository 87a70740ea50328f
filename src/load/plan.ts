// Owns the run plan: which clients join which document when, the open-model arrival schedules, the seeded randomness, and the thread messages.
import type { Scenario } from './scenario.js';
import type { SyncTarget } from './sync-client.js';
import type { RestAuth } from './rest-client.js';
import type { Counters } from './histograms.js';

/** mulberry32: small, fast, seeded (two runs with one seed make the same schedule). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Arrival times (seconds from the start) of an open-model stream of `rate`/s that ramps linearly from 0 over
 * `rampUp` seconds: arrival k is where the expected count reaches k. Uniform: k = n + phase; Poisson: k grows by
 * exponential gaps. The schedule never depends on answers, so a slow server cannot slow the sender.
 */
export class Arrivals {
  private k: number;
  constructor(
    private readonly rate: number,
    private readonly rampUp: number,
    private readonly kind: 'uniform' | 'poisson',
    private readonly random: () => number,
    private readonly startAt = 0,
  ) {
    this.k = kind === 'uniform' ? random() : this.gap();
  }

  private gap(): number {
    return this.kind === 'uniform' ? 1 : -Math.log(1 - this.random());
  }

  /** The next arrival's time in seconds from the run's start (Infinity for a zero rate). */
  next(): number {
    if (this.rate <= 0) return Infinity;
    const k = this.k;
    this.k += this.gap();
    const rampCount = (this.rate * this.rampUp) / 2;
    const t = k <= rampCount && this.rampUp > 0 ? Math.sqrt((2 * this.rampUp * k) / this.rate) : this.rampUp + (k - rampCount) / this.rate;
    return this.startAt + t;
  }
}

export type ClientRole = 'editor' | 'reader' | 'late' | 'churn';

export interface ClientPlan {
  readonly id: number;
  readonly doc: number;
  readonly role: ClientRole;
  readonly userId: string;
  /** Seconds from the start. */
  readonly joinAt: number;
  /** Seconds from the start; churn clients leave, the others stay to the end. */
  readonly leaveAt?: number;
  /** Plait user JWT (set by the coordinator after minting). */
  token?: string;
}

/** Every sync client of the run, in join order within each role. */
export function planClients(scenario: Scenario, runId: string, seed: number): ClientPlan[] {
  const random = rng(seed ^ 0x9e3779b9);
  const clients: ClientPlan[] = [];
  const add = (doc: number, role: ClientRole, joinAt: number, leaveAt?: number): void => {
    const id = clients.length;
    clients.push({ id, doc, role, userId: `${runId}-u${id}`, joinAt, ...(leaveAt === undefined ? {} : { leaveAt }) });
  };
  const { documents, rampUpSeconds: ramp } = scenario;
  // connections open evenly over the ramp-up, interleaved across documents
  const early = (scenario.editing?.editorsPerDocument ?? 0) + (scenario.readers?.perDocument ?? 0);
  const total = early * documents;
  let slot = 0;
  for (let i = 0; i < (scenario.editing?.editorsPerDocument ?? 0); i++) {
    for (let doc = 0; doc < documents; doc++) add(doc, 'editor', (ramp * slot++) / Math.max(1, total));
  }
  for (let i = 0; i < (scenario.readers?.perDocument ?? 0); i++) {
    for (let doc = 0; doc < documents; doc++) add(doc, 'reader', (ramp * slot++) / Math.max(1, total));
  }
  const lateAt = scenario.readers?.lateJoinAtSeconds ?? ramp + scenario.steadySeconds / 2;
  for (let i = 0; i < (scenario.readers?.lateJoinersPerDocument ?? 0); i++) {
    for (let doc = 0; doc < documents; doc++) add(doc, 'late', lateAt);
  }
  const presence = scenario.presence;
  if (presence !== undefined && presence.churnPerSecond > 0) {
    const arrivals = new Arrivals(presence.churnPerSecond, ramp, scenario.arrivals, random);
    const end = ramp + scenario.steadySeconds;
    for (let t = arrivals.next(); t < end; t = arrivals.next()) {
      add(Math.floor(random() * documents), 'churn', t, Math.min(end, t + presence.churnHoldSeconds));
    }
  }
  return clients;
}

export const documentIdOf = (runId: string, doc: number): string => `${runId}-d${doc}`;

/** What a worker thread gets at its start. */
export interface WorkerPlan {
  readonly workerId: number;
  readonly workers: number;
  readonly runId: string;
  readonly seed: number;
  readonly scenario: Scenario;
  readonly target: SyncTarget;
  /** Absent against servers without Plait's REST API. */
  readonly rest?: RestAuth;
  readonly clients: ClientPlan[];
  /** Interval of the figures sent to the coordinator (ms). */
  readonly intervalMs: number;
}

/** Per-client outcome at the end: what its document held compared with what was sent to it. */
export interface ClientResult {
  readonly id: number;
  readonly doc: number;
  readonly role: ClientRole;
  /** Edits present in its copy of the document at the end (its own included). */
  readonly received: number;
  /** Edits that arrived as live updates (measured end to end). */
  readonly live: number;
  readonly synced: boolean;
  readonly disconnects: number;
}

export type ToWorker = { type: 'start'; startAt: number } | { type: 'stop'; early: boolean } | { type: 'drain'; sentPerDoc: number[]; timeoutMs: number } | { type: 'close' };

export interface IntervalFigures {
  readonly index: number;
  /** Seconds the figures cover: the interval, or more when the thread fell behind and skipped indexes. */
  readonly seconds: number;
  readonly histograms: Record<string, string>;
  readonly counters: Counters;
  /** Open sockets, synced clients, REST requests in flight at the interval's end. */
  readonly gauges: Record<string, number>;
  /** Event-loop utilization of the worker over the interval (0..1): near 1, the generator itself is the bottleneck. */
  readonly elu: number;
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'interval'; workerId: number; figures: IntervalFigures }
  | { type: 'stopped'; workerId: number; sentPerDoc: number[] }
  | { type: 'drained'; workerId: number; clients: ClientResult[]; errors: string[] }
  | { type: 'failed'; workerId: number; message: string };
