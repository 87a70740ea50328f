// Owns the owner-email lifecycle: verified or not per workspace, one-time email links (verify, sign in), and key expiry while unverified.
import type { Database, Key } from 'lmdb';
import { AppError, permissionDenied } from '../errors.js';
import { randomToken, type Secrets } from '../auth/secrets.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import type { Workspaces } from './workspaces.js';

export type LinkPurpose = 'verify' | 'login';

interface OwnerEmailRecord {
  verifiedAt?: number;
  /** The keys had expired when the owner verified (Get Email Verification Status then says "reactivated"). */
  reactivated?: true;
  /** The dev workspace: its keys never expire. */
  exempt?: true;
  /** Keyed hash of the one live link of each purpose (a new link replaces the old one). */
  links?: Partial<Record<LinkPurpose, string>>;
}

interface EmailLinkRecord {
  purpose: LinkPurpose;
  workspaceId: string;
  expiresAt: number;
  continueUrl?: string;
}

export interface OwnerEmailOptions {
  /** 0: keys of unverified workspaces never expire. */
  readonly graceMs: number;
  readonly verificationLinkTtlMs: number;
  readonly loginLinkTtlMs: number;
  readonly now: () => number;
}

export interface RedeemedLink {
  readonly workspaceId: string;
  readonly continueUrl?: string;
}

/** A link that is unknown, already used, expired or of another purpose. One answer for all, on purpose. */
export const linkRefused = (): AppError =>
  new AppError('FAILED_PRECONDITION', 'this link is invalid, has expired or was already used; request a new one');

export class OwnerEmails {
  private readonly states: Database<OwnerEmailRecord, Key>;
  private readonly links: Database<EmailLinkRecord, Key>;
  /** workspaceId -> creation time, for workspaces whose owner has not verified (and is not exempt). */
  private readonly unverified = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    workspaces: Pick<Workspaces, 'owners'>,
    private readonly options: OwnerEmailOptions,
  ) {
    this.states = store.records<OwnerEmailRecord>(DB.ownerEmail);
    this.links = store.records<EmailLinkRecord>(DB.emailLinks);
    for (const owner of workspaces.owners()) {
      const state = this.states.get(owner.id);
      if (state?.verifiedAt === undefined && state?.exempt !== true) this.unverified.set(owner.id, owner.createdAt);
    }
  }

  /** Cluster mode: workspaces created or verified on another node; the unverified set is read again. */
  reload(workspaces: Pick<Workspaces, 'owners'>): void {
    this.unverified.clear();
    for (const owner of workspaces.owners()) {
      const state = this.states.get(owner.id);
      if (state?.verifiedAt === undefined && state?.exempt !== true) this.unverified.set(owner.id, owner.createdAt);
    }
  }

  /** A new workspace starts unverified; its keys work for the grace period from now. */
  created(workspaceId: string): void {
    this.unverified.set(workspaceId, this.options.now());
  }

  /** Exempts a workspace from expiry (the dev workspace, whose owner address receives no mail). */
  async exempt(workspaceId: string): Promise<void> {
    await this.store.transaction(() => {
      this.states.put(workspaceId, { ...(this.states.get(workspaceId) ?? {}), exempt: true });
    });
    this.unverified.delete(workspaceId);
  }

  isVerified(workspaceId: string): boolean {
    return this.states.get(workspaceId)?.verifiedAt !== undefined;
  }

  /** When the keys of an unverified workspace stop working; undefined when they do not expire. */
  expiresAt(workspaceId: string): number | undefined {
    const createdAt = this.unverified.get(workspaceId);
    return createdAt === undefined || this.options.graceMs === 0 ? undefined : createdAt + this.options.graceMs;
  }

  /** Throws PERMISSION_DENIED once an unverified workspace's grace period is over. One Map lookup per request. */
  assertKeysActive(workspaceId: string): void {
    const expiresAt = this.expiresAt(workspaceId);
    if (expiresAt !== undefined && this.options.now() >= expiresAt) {
      throw permissionDenied(
        "the API key has expired because the workspace owner's email address is not verified; follow the link in the verification email " +
          '(or sign in with a login link), then call /v2/workspace/email/status',
      );
    }
  }

  /**
   * Status for Get Email Verification Status: `reactivated` when the keys had expired before the owner verified
   * (they work again from the moment of verification).
   */
  status(workspaceId: string): { verified: boolean; reactivated: boolean } {
    const state = this.states.get(workspaceId);
    if (state?.verifiedAt === undefined) return { verified: false, reactivated: false };
    return { verified: true, reactivated: state.reactivated === true };
  }

  /**
   * Issues a one-time link token. Only its keyed hash (HMAC under the server key) is stored, so a copy of the
   * database yields no usable link; a new link of a purpose replaces the workspace's previous one.
   */
  async issueLink(workspaceId: string, purpose: LinkPurpose, continueUrl?: string): Promise<string> {
    const token = randomToken(32);
    const hash = this.secrets.lookupHash(token);
    const ttl = purpose === 'verify' ? this.options.verificationLinkTtlMs : this.options.loginLinkTtlMs;
    const link: EmailLinkRecord = { purpose, workspaceId, expiresAt: this.options.now() + ttl, ...(continueUrl === undefined ? {} : { continueUrl }) };
    await this.store.transaction(() => {
      const state = this.states.get(workspaceId) ?? {};
      const previous = state.links?.[purpose];
      if (previous !== undefined) this.links.remove(previous);
      this.links.put(hash, link);
      this.states.put(workspaceId, { ...state, links: { ...state.links, [purpose]: hash } });
    });
    return token;
  }

  /**
   * Redeems a link once: the link is removed and the owner marked verified in one transaction (following either
   * kind of link proves the owner reads that inbox). A second use, an expired link, a link of another purpose or an
   * unknown token is refused with the same error.
   */
  async redeem(token: string, purpose: LinkPurpose): Promise<RedeemedLink> {
    if (token === '' || token.length > 200) throw linkRefused();
    const hash = this.secrets.lookupHash(token);
    // A read first: a flood of made-up tokens costs no write transaction.
    if (this.links.get(hash) === undefined) throw linkRefused();
    const now = this.options.now();
    const keysExpired = (workspaceId: string): boolean => {
      const expiresAt = this.expiresAt(workspaceId);
      return expiresAt !== undefined && now >= expiresAt;
    };
    const outcome = await this.store.transaction((): RedeemedLink | 'expired' | undefined => {
      const link = this.links.get(hash);
      if (link === undefined || link.purpose !== purpose) return undefined;
      this.links.remove(hash);
      const state = this.states.get(link.workspaceId) ?? {};
      const links = { ...state.links };
      if (links[purpose] === hash) delete links[purpose];
      if (now >= link.expiresAt) {
        this.states.put(link.workspaceId, { ...state, links });
        return 'expired';
      }
      const verified = state.verifiedAt === undefined ? { verifiedAt: now, ...(keysExpired(link.workspaceId) ? { reactivated: true as const } : {}) } : {};
      this.states.put(link.workspaceId, { ...state, links, ...verified });
      return { workspaceId: link.workspaceId, ...(link.continueUrl === undefined ? {} : { continueUrl: link.continueUrl }) };
    });
    if (outcome === undefined || outcome === 'expired') throw linkRefused();
    this.unverified.delete(outcome.workspaceId);
    return outcome;
  }
}
