// Owns who owns a document in a cluster: one lease per document in a JetStream KV bucket, taken, renewed, released, lapsed.
import type { KV, KvEntry, NatsConnection } from 'nats';
import type { Logger } from '../log.js';

/** The KV bucket of leases; one per cluster (every node binds the same one). */
export const LEASE_BUCKET = 'plait_leases';
/** The KV bucket of cluster roles (the worker role) and node liveness; apart, so document-lease listeners never see them. */
export const ROLE_BUCKET = 'plait_roles';

/** What a lease's value says: who holds it and until when (wall-clock ms), so a taker can tell a lapsed one. */
interface LeaseValue {
  readonly node: string;
  readonly expiresAt: number;
}

/** The answer to a claim: this node holds the lease, or `owner` does (until it lapses). */
export type Claim = { readonly mine: true } | { readonly mine: false; readonly owner: string };

export interface LeasesOptions {
  readonly nodeId: string;
  /** How long a lease lasts without renewal (CLUSTER_LEASE_MS); renewed every third of it. */
  readonly leaseMs: number;
  readonly log: Pick<Logger, 'warn' | 'debug'>;
  /** Stream replicas of the bucket (3 in production on a three-server NATS cluster; 1 in tests). */
  readonly replicas?: number;
  /** The KV bucket (default `LEASE_BUCKET`; the worker role and node liveness use `ROLE_BUCKET`). */
  readonly bucket?: string;
  /** Wall clock; tests may move it. */
  readonly now?: () => number;
}

interface Held {
  /** The KV revision this node wrote last: renewals and the release are compare-and-set on it. */
  revision: number;
  /** The KV revision of the take (renewals leave it): names this holding of the lease in the state stream's claims. */
  readonly taken: number;
  /** Until when this node may act as owner: the start of its last successful write plus the lease time. */
  validUntil: number;
}

/** KV keys and subject tokens allow [-_A-Za-z0-9=/.]; base64url of the document key string keeps every id safe. */
export function leaseKey(documentKey: string): string {
  return Buffer.from(documentKey, 'utf8').toString('base64url');
}

/**
 * Leases of one node. A claim reads the key and either creates it (absent, deleted or lapsed: compare-and-set on
 * the revision read, so of nodes racing exactly one write succeeds) or reports the holder. Held leases are renewed
 * every third of the lease time with compare-and-set on the revision this node wrote; a renewal that fails, or one
 * that cannot reach NATS before `validUntil`, loses the lease and tells `onLost` listeners, which must stop serving
 * the document. The bucket's TTL is the lease time too, so the server drops a dead node's leases by itself.
 */
export class Leases {
  private readonly held = new Map<string, Held>();
  private readonly claiming = new Map<string, Promise<Claim>>();
  private readonly lostListeners: Array<(documentKey: string) => void> = [];
  private readonly now: () => number;
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private closed = false;

  private constructor(private readonly kv: KV, private readonly options: LeasesOptions) {
    this.now = options.now ?? Date.now;
    this.renewTimer = setInterval(() => void this.renewAll(), Math.max(100, Math.floor(options.leaseMs / 3)));
    this.renewTimer.unref();
  }

  /** Binds (creating if needed) the lease bucket. */
  static async open(nc: NatsConnection, options: LeasesOptions): Promise<Leases> {
    const kv = await nc.jetstream().views.kv(options.bucket ?? LEASE_BUCKET, { history: 1, ttl: options.leaseMs, replicas: options.replicas ?? 1 });
    return new Leases(kv, options);
  }

  get nodeId(): string {
    return this.options.nodeId;
  }

  /** Whether this node holds `documentKey`'s lease and may act on it now (no network). */
  owns(documentKey: string): boolean {
    const held = this.held.get(documentKey);
    return held !== undefined && this.now() < held.validUntil;
  }

  /** The KV revision at which this node took `documentKey`'s lease (undefined when it does not hold it). */
  takenRevision(documentKey: string): number | undefined {
    return this.held.get(documentKey)?.taken;
  }

  get heldCount(): number {
    return this.held.size;
  }

  /** Told when a held lease is lost (renewal refused or too late); the document must stop being served here. */
  onLost(listener: (documentKey: string) => void): void {
    this.lostListeners.push(listener);
  }

  /** Takes the lease when it is free or lapsed; concurrent claims of one key on this node share one round trip. */
  claim(documentKey: string): Promise<Claim> {
    if (this.owns(documentKey)) return Promise.resolve({ mine: true });
    let claiming = this.claiming.get(documentKey);
    if (claiming === undefined) {
      claiming = this.take(documentKey).finally(() => this.claiming.delete(documentKey));
      this.claiming.set(documentKey, claiming);
    }
    return claiming;
  }

  /** Who holds the lease now (undefined: nobody, or it lapsed), without taking it. */
  async owner(documentKey: string): Promise<string | undefined> {
    if (this.owns(documentKey)) return this.options.nodeId;
    const current = this.valueOf(await this.kv.get(leaseKey(documentKey)));
    return current !== undefined && current.expiresAt > this.now() ? current.node : undefined;
  }

  private async take(documentKey: string): Promise<Claim> {
    if (this.closed) throw new Error('leases are closed');
    const key = leaseKey(documentKey);
    const entry = await this.kv.get(key);
    const current = this.valueOf(entry);
    const started = this.now();
    if (current !== undefined && current.expiresAt > started && current.node !== this.options.nodeId) return { mine: false, owner: current.node };
    const value = this.encode(started);
    try {
      // Absent (or deleted/purged): create, which fails if another node created it first. Present but lapsed (or
      // ours from before a restart): update on the revision read, which fails if anyone wrote since.
      const revision = current === undefined ? await this.kv.create(key, value) : await this.kv.update(key, value, entry?.revision ?? 0);
      this.held.set(documentKey, { revision, taken: revision, validUntil: started + this.options.leaseMs });
      this.options.log.debug('lease taken', { key: documentKey, revision });
      return { mine: true };
    } catch (error) {
      if (!isConflict(error)) throw error;
      // Another node won the race: report it (or, if it already released, the next claim takes it).
      const winner = this.valueOf(await this.kv.get(key));
      if (winner !== undefined && winner.node !== this.options.nodeId) return { mine: false, owner: winner.node };
      throw error;
    }
  }

  /** Gives the lease up (idle unload, graceful stop) so the next node that needs the document takes it at once. */
  async release(documentKey: string): Promise<void> {
    const held = this.held.get(documentKey);
    if (held === undefined) return;
    this.held.delete(documentKey);
    try {
      await this.kv.delete(leaseKey(documentKey), { previousSeq: held.revision });
    } catch (error) {
      // Someone took it over already (it had lapsed), or NATS is away: then the lease lapses by itself.
      this.options.log.warn('lease release failed; it will lapse', { key: documentKey, error: String(error) });
    }
  }

  /** Graceful stop: releases every held lease and stops renewing. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    await this.renewing;
    await Promise.all([...this.held.keys()].map((documentKey) => this.release(documentKey)));
  }

  /** Renews every held lease; one pass at a time. Public for tests, which drive it instead of waiting. */
  renewAll(): Promise<void> {
    this.renewing ??= this.renewPass().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewPass(): Promise<void> {
    await Promise.all(
      [...this.held.entries()].map(async ([documentKey, held]) => {
        const started = this.now();
        try {
          const revision = await this.kv.update(leaseKey(documentKey), this.encode(started), held.revision);
          if (this.held.get(documentKey) !== held) return;
          held.revision = revision;
          held.validUntil = started + this.options.leaseMs;
        } catch (error) {
          if (this.held.get(documentKey) !== held) return;
          // A conflict: another node holds it now. Anything else (NATS away): keep trying until validUntil passes.
          if (isConflict(error) || this.now() >= held.validUntil) this.lose(documentKey, error);
          else this.options.log.warn('lease renewal failed; retrying', { key: documentKey, error: String(error) });
        }
      }),
    );
    for (const [documentKey, held] of this.held) if (this.now() >= held.validUntil) this.lose(documentKey, new Error('lease expired before renewal'));
  }

  private lose(documentKey: string, error: unknown): void {
    this.held.delete(documentKey);
    this.options.log.warn('lease lost', { key: documentKey, error: String(error) });
    for (const listener of this.lostListeners) listener(documentKey);
  }

  private encode(now: number): Uint8Array {
    const value: LeaseValue = { node: this.options.nodeId, expiresAt: now + this.options.leaseMs };
    return new TextEncoder().encode(JSON.stringify(value));
  }

  private valueOf(entry: KvEntry | null): LeaseValue | undefined {
    if (entry === null || entry.operation !== 'PUT') return undefined;
    try {
      const value = JSON.parse(new TextDecoder().decode(entry.value)) as Partial<LeaseValue>;
      if (typeof value.node === 'string' && typeof value.expiresAt === 'number') return { node: value.node, expiresAt: value.expiresAt };
    } catch (error) {
      this.options.log.warn('unreadable lease value; treated as lapsed', { error: String(error) });
    }
    return undefined;
  }
}

/** JetStream's "wrong last sequence" (create on an existing key, update on a moved revision). */
function isConflict(error: unknown): boolean {
  const text = error instanceof Error ? error.message : String(error);
  return /wrong last sequence|key exists|10071/.test(text) || (typeof error === 'object' && error !== null && 'api_error' in error && (error as { api_error?: { err_code?: number } }).api_error?.err_code === 10071);
}
