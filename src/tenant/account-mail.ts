// Owns the account emails (owner verification, sign-in link): composing them and sending them off the reply path through a bounded queue.
import { resourceExhausted, unavailable } from '../errors.js';
import type { EmailMessage, EmailTransport } from '../delivery/outbound/email.js';
import type { Logger } from '../log.js';
import type { OwnerEmails } from './owner-email.js';
import type { Workspaces } from './workspaces.js';

export interface AccountMailDeps {
  /** Closed by `stop` when it can be (the server's SMTP pool). */
  readonly transport: EmailTransport & { close?(): void };
  readonly from: string;
  readonly fromName?: string;
  /** Base URL of this server as users reach it (PUBLIC_URL, else http://HOST:PORT once listening). */
  readonly publicUrl: () => string;
  readonly ownerEmails: Pick<OwnerEmails, 'issueLink'>;
  readonly workspaces: Pick<Workspaces, 'idForEmail'>;
  readonly log: Logger;
  readonly verificationLinkTtlMs: number;
  readonly loginLinkTtlMs: number;
  /** Jobs waiting at most; past it requests are answered RESOURCE_EXHAUSTED (the same for every address). */
  readonly capacity?: number;
}

type Job = () => Promise<void>;

/** Jobs sent at once: SMTP round trips overlap, the queue stays the bound. */
const CONCURRENCY = 2;

export class AccountMail {
  private readonly queue: Job[] = [];
  private running = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly capacity: number;
  private stopped = false;
  private scheduled = false;

  constructor(private readonly deps: AccountMailDeps) {
    this.capacity = deps.capacity ?? 1000;
  }

  /** Queues the verification email of a new workspace (the reply to Create Workspace does not wait for it). */
  sendVerification(workspace: { id: string; ownerEmail: string; ownerName: string; workspaceName: string }): void {
    this.enqueue(async () => {
      const token = await this.deps.ownerEmails.issueLink(workspace.id, 'verify');
      const link = `${this.deps.publicUrl()}/email/verify?token=${encodeURIComponent(token)}`;
      await this.send(workspace.ownerEmail, verificationMessage(workspace.workspaceName, link, this.deps.verificationLinkTtlMs));
      this.deps.log.info('verification email sent', { workspaceId: workspace.id });
    });
  }

  /**
   * Queues a sign-in link for `email`. Whether the address owns a workspace is looked up inside the job, after the
   * reply: the caller's answer and its timing are the same for known and unknown addresses.
   */
  requestLoginLink(email: string, continueUrl: string): void {
    this.enqueue(async () => {
      const workspaceId = this.deps.workspaces.idForEmail(email);
      if (workspaceId === undefined) {
        this.deps.log.info('login link requested for an address that owns no workspace; nothing sent');
        return;
      }
      const token = await this.deps.ownerEmails.issueLink(workspaceId, 'login', continueUrl);
      const link = `${this.deps.publicUrl()}/email/sign-in?token=${encodeURIComponent(token)}`;
      await this.send(email, loginMessage(link, this.deps.loginLinkTtlMs));
      this.deps.log.info('login link sent', { workspaceId });
    });
  }

  /** Resolves when every queued email has been sent or has failed (graceful stop, tests). */
  idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0 && !this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Gives queued emails up to `timeoutMs` to go out (their links are written to the store, which closes next), then
   * closes the transport. An owner whose email was lost can ask for a login link, which also verifies the address.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      this.idle().then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (late) this.deps.log.warn('stopping with account emails still queued', { queued: this.queue.length + this.running });
    this.queue.length = 0;
    this.deps.transport.close?.();
  }

  private enqueue(job: Job): void {
    if (this.stopped) throw unavailable('the server is shutting down; retry shortly');
    if (this.queue.length >= this.capacity) {
      throw resourceExhausted('too many account emails are waiting to be sent; try again shortly', 60);
    }
    this.queue.push(job);
    // Jobs start on a later turn, never inside the caller's: the reply is written first, so nothing a job does
    // (the address lookup included) can change what the caller sees or how long it waits.
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.pump();
      });
    }
  }

  private pump(): void {
    while (this.running < CONCURRENCY) {
      const job = this.queue.shift();
      if (job === undefined) break;
      this.running++;
      job()
        .catch((error: unknown) => this.deps.log.warn('account email not sent', { error }))
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
    if (this.running === 0 && this.queue.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private async send(to: string, message: Pick<EmailMessage, 'subject' | 'text' | 'html'>): Promise<void> {
    await this.deps.transport.send({
      to: [to],
      from: this.deps.from,
      ...(this.deps.fromName === undefined ? {} : { fromName: this.deps.fromName }),
      ...message,
    });
  }
}

/** Text made safe for HTML content and attribute values (the link pages use it too). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
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
