// Owns sending the account emails (owner verification, sign-in link): a durable delivery job per request, its link issued and its message written at each attempt.
import { randomId } from '../../auth/secrets.js';
import type { EmailMessage, EmailTransport } from '../../email-message.js';
import type { Logger } from '../../log.js';
import type { WriteTx } from '../../store/env.js';
import type { AccountEmailRequest, AccountMailQueue } from '../../tenant/account-mail.js';
import type { OwnerEmails } from '../../tenant/owner-email.js';
import type { Workspaces } from '../../tenant/workspaces.js';
import { BASIC_RETRY_DELAYS_MS, errorText } from '../channel.js';
import type { Clock } from '../clock.js';
import { EmailSendError } from '../outbound/email.js';
import type { DeliveryJob, DeliveryQueue } from '../queue.js';
import type { AttemptResult, ChannelRunner } from '../runner.js';
import { escapeHtml } from '../templates.js';
import { messageIdOf } from './email.js';

export interface AccountEmailDeps {
  readonly queue: DeliveryQueue;
  readonly clock: Clock;
  /** The server's own transport (SMTP_URL, else the dev log); account emails never go through a workspace's SendGrid. */
  readonly transport: EmailTransport;
  /** EMAIL_FROM, parsed. */
  readonly from: string;
  readonly fromName?: string;
  /** Base URL of this server as users reach it (PUBLIC_URL, else http://HOST:PORT once listening). */
  readonly publicUrl: () => string;
  readonly ownerEmails: Pick<OwnerEmails, 'issueLink' | 'isVerified'>;
  readonly workspaces: Pick<Workspaces, 'idForEmail'>;
  readonly log: Logger;
  readonly verificationLinkTtlMs: number;
  readonly loginLinkTtlMs: number;
}

/** One queue target for all of them: account emails share the runner's per-target limit, not a workspace's. */
const TARGET = 'account-email';

/**
 * A job holds the request, never a link: the database keeps only hashes of live links (docs/owner-email.md), so each
 * attempt issues a fresh link, which also replaces the one a failed attempt issued. Attempts are at least once: a
 * crash after the mail server took a message and before the job was settled sends it again, with the same
 * Message-ID and a new link (the older link is void by then).
 */
export class AccountEmailChannel implements ChannelRunner, AccountMailQueue {
  /** First attempt at once, then 5 s, 1 min, 10 min, 1 h. */
  readonly retryDelaysMs = BASIC_RETRY_DELAYS_MS;

  constructor(private readonly deps: AccountEmailDeps) {}

  add(tx: WriteTx, request: AccountEmailRequest): void {
    const now = this.deps.clock.now();
    // Not about any API key: '' keeps these jobs out of every API key's and document's deletion.
    this.deps.queue.enqueue(tx, { id: `account:${randomId(24)}`, channel: 'account', apiKey: '', target: TARGET, due: now, createdAt: now, payload: request });
  }

  wake(): void {
    this.deps.queue.notify();
  }

  /**
   * A finished job is removed in its settling transaction: nothing reads it (a failure is logged at warn by the
   * runner), and a row kept for the queue's week would hold an address that asked for nothing more.
   */
  settled(tx: WriteTx, next: DeliveryJob): void {
    if (next.state !== 'pending') this.deps.queue.remove(tx, next.id);
  }

  async attempt(job: DeliveryJob): Promise<AttemptResult> {
    const request = job.payload as AccountEmailRequest;
    try {
      if (request.kind === 'verify') await this.sendVerification(job, request);
      else await this.sendLoginLink(job, request);
      return { ok: true };
    } catch (error) {
      return { ok: false, error: errorText(error), permanent: error instanceof EmailSendError && error.permanent };
    }
  }

  private async sendVerification(job: DeliveryJob, request: Extract<AccountEmailRequest, { kind: 'verify' }>): Promise<void> {
    // Verified meanwhile (a sign-in link proves the address too): the email would only confuse.
    if (this.deps.ownerEmails.isVerified(request.workspaceId)) {
      this.deps.log.info('verification email not sent: the address was verified meanwhile', { workspaceId: request.workspaceId });
      return;
    }
    const token = await this.deps.ownerEmails.issueLink(request.workspaceId, 'verify');
    const link = `${this.deps.publicUrl()}/email/verify?token=${encodeURIComponent(token)}`;
    await this.send(job, request.ownerEmail, verificationMessage(request.workspaceName, link, this.deps.verificationLinkTtlMs));
    this.deps.log.info('verification email sent', { workspaceId: request.workspaceId });
  }

  private async sendLoginLink(job: DeliveryJob, request: Extract<AccountEmailRequest, { kind: 'login' }>): Promise<void> {
    const workspaceId = this.deps.workspaces.idForEmail(request.email);
    if (workspaceId === undefined) {
      this.deps.log.info('login link requested for an address that owns no workspace; nothing sent');
      return;
    }
    const token = await this.deps.ownerEmails.issueLink(workspaceId, 'login', request.continueUrl);
    const link = `${this.deps.publicUrl()}/email/sign-in?token=${encodeURIComponent(token)}`;
    await this.send(job, request.email, loginMessage(link, this.deps.loginLinkTtlMs));
    this.deps.log.info('login link sent', { workspaceId });
  }

  private async send(job: DeliveryJob, to: string, message: Pick<EmailMessage, 'subject' | 'text' | 'html'>): Promise<void> {
    await this.deps.transport.send({
      to: [to],
      from: this.deps.from,
      ...(this.deps.fromName === undefined ? {} : { fromName: this.deps.fromName }),
      ...message,
      messageId: messageIdOf(job.id, this.deps.from),
    });
  }
}

function describeTtl(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} day${ms === 86_400_000 ? '' : 's'}`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} hour${ms === 3_600_000 ? '' : 's'}`;
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  return `${Math.round(ms / 1000)} seconds`;
}

function verificationMessage(workspaceName: string, link: string, ttlMs: number): Pick<EmailMessage, 'subject' | 'text' | 'html'> {
  const ttl = describeTtl(ttlMs);
  return {
    subject: 'Verify your email address for Plait',
    text: [
      `Confirm that you own this address to keep the API keys of "${workspaceName}" working:`,
      '',
      link,
      '',
      `The link works once and expires in ${ttl}. If you did not create a Plait workspace, ignore this email.`,
    ].join('\n'),
    html:
      `<p>Confirm that you own this address to keep the API keys of <b>${escapeHtml(workspaceName)}</b> working:</p>` +
      `<p><a href="${escapeHtml(link)}">Verify my email address</a></p>` +
      `<p>The link works once and expires in ${ttl}. If you did not create a Plait workspace, ignore this email.</p>`,
  };
}

function loginMessage(link: string, ttlMs: number): Pick<EmailMessage, 'subject' | 'text' | 'html'> {
  const ttl = describeTtl(ttlMs);
  return {
    subject: 'Your Plait sign-in link',
    text: ['Sign in to your Plait workspace:', '', link, '', `The link works once and expires in ${ttl}. If you did not ask for it, ignore this email.`].join('\n'),
    html:
      `<p><a href="${escapeHtml(link)}">Sign in to your Plait workspace</a></p>` +
      `<p>The link works once and expires in ${ttl}. If you did not ask for it, ignore this email.</p>`,
  };
}
