// Owns sending email: the EmailTransport seam, the server's SMTP transport (nodemailer), the dev log transport, SendGrid v3.
import type { Transporter } from 'nodemailer';
import type { Logger } from '../../log.js';
import type { EmailMessage, EmailTransport } from '../../email-message.js';
import type { OutboundHttp } from './http.js';
import { OutboundError } from './http.js';

// The message and transport shapes live at the top of src/ so the core (account mail) needs no import of this adapter.
export type { EmailMessage, EmailTransport } from '../../email-message.js';

/** `permanent`: retrying the same message cannot succeed (bad credentials, rejected address). */
export class EmailSendError extends Error {
  override readonly name = 'EmailSendError';
  constructor(message: string, readonly permanent: boolean, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export interface ServerEmailOptions {
  /** `SMTP_URL`; undefined selects the dev log transport. */
  readonly smtpUrl: string | undefined;
  readonly log: Logger;
}

export interface ClosableEmailTransport extends EmailTransport {
  close(): void;
}

/** The transport behind `type: default`: SMTP when `SMTP_URL` is set, else one JSON log line per email. */
export function createServerEmailTransport(options: ServerEmailOptions): ClosableEmailTransport {
  return options.smtpUrl === undefined ? new LogEmailTransport(options.log) : new SmtpEmailTransport(options.smtpUrl);
}

/** Splits `Name <addr@x>` into its parts; a bare address has no name. Used for `EMAIL_FROM`. */
export function parseSender(value: string): { address: string; name?: string } {
  const match = /^\s*(.*?)\s*<([^<>\s]+)>\s*$/.exec(value);
  if (match === null) return { address: value.trim() };
  const name = (match[1] ?? '').replace(/^"|"$/g, '');
  return name === '' ? { address: match[2] ?? '' } : { address: match[2] ?? '', name };
}

export class SmtpEmailTransport implements ClosableEmailTransport {
  /** nodemailer is loaded at the first send: a server that sends no email does not hold it (~2 MB of heap; issue 18). */
  private mailer: Promise<Transporter> | undefined;
  private closed = false;

  constructor(private readonly url: string) {}

  private transporter(): Promise<Transporter> {
    // A pool reuses connections across the many small notification emails; timeouts keep a dead server from
    // holding a delivery forever (the delivery is retried instead).
    this.mailer ??= import('nodemailer').then(({ createTransport }) =>
      createTransport({
        url: this.url,
        pool: true,
        maxConnections: 4,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 30_000,
      }),
    );
    return this.mailer;
  }

  async send(msg: EmailMessage): Promise<void> {
    if (this.closed) throw new EmailSendError('SMTP send failed: the transport is closed', false);
    try {
      const mailer = await this.transporter();
      await mailer.sendMail({
        from: msg.fromName === undefined ? msg.from : { name: msg.fromName, address: msg.from },
        to: msg.to,
        subject: msg.subject,
        text: msg.text,
        html: msg.html,
        ...(msg.messageId === undefined ? {} : { messageId: msg.messageId }),
      });
    } catch (error) {
      throw new EmailSendError(`SMTP send failed: ${error instanceof Error ? error.message : String(error)}`, isPermanentSmtp(error), { cause: error });
    }
  }

  close(): void {
    this.closed = true;
    void this.mailer?.then((mailer) => mailer.close());
  }
}

/** 5xx SMTP replies (other than 552-style size issues, which retrying also cannot fix) and auth failures are final. */
function isPermanentSmtp(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { responseCode, code } = error as { responseCode?: unknown; code?: unknown };
  if (code === 'EAUTH' || code === 'EENVELOPE') return true;
  return typeof responseCode === 'number' && responseCode >= 500 && responseCode < 600;
}

/** Dev transport: `npm start` works with no mail server; each email is one JSON log line. */
export class LogEmailTransport implements ClosableEmailTransport {
  constructor(private readonly log: Logger) {}

  async send(msg: EmailMessage): Promise<void> {
    this.log.info('email (SMTP_URL unset: logged, not sent)', {
      email: { to: msg.to, from: msg.from, fromName: msg.fromName ?? null, subject: msg.subject, text: msg.text, html: msg.html },
    });
  }

  close(): void {}
}

export interface SendGridOptions {
  readonly http: OutboundHttp;
  readonly apiKey: string;
  /** `SENDGRID_BASE_URL`, without the trailing `/v3/...`. */
  readonly baseUrl: string;
  readonly timeoutMs?: number;
}

/**
 * SendGrid's v3 Mail Send API (`POST /v3/mail/send`, Bearer key, 202 on acceptance). One personalization per
 * recipient, so no recipient sees the others' addresses.
 */
export class SendGridEmailTransport implements EmailTransport {
  constructor(private readonly options: SendGridOptions) {}

  async send(msg: EmailMessage): Promise<void> {
    const body = {
      personalizations: msg.to.map((email) => ({ to: [{ email }] })),
      from: msg.fromName === undefined ? { email: msg.from } : { email: msg.from, name: msg.fromName },
      subject: msg.subject,
      content: [
        { type: 'text/plain', value: msg.text },
        { type: 'text/html', value: msg.html },
      ],
    };
    let status: number;
    let text: string;
    try {
      const response = await this.options.http.request({
        url: `${this.options.baseUrl}/v3/mail/send`,
        method: 'POST',
        headers: { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: this.options.timeoutMs ?? 15_000,
        maxBytes: 64 * 1024,
        maxRedirects: 0,
      });
      status = response.status;
      text = response.body.toString('utf8');
    } catch (error) {
      const permanent = error instanceof OutboundError && (error.code === 'BLOCKED_ADDRESS' || error.code === 'BAD_URL');
      throw new EmailSendError(`SendGrid request failed: ${error instanceof Error ? error.message : String(error)}`, permanent, { cause: error });
    }
    if (status >= 200 && status < 300) return;
    // 429 and 5xx are SendGrid's "try again"; other 4xx (bad key, bad sender) will fail the same way every time.
    const permanent = status >= 400 && status < 500 && status !== 429 && status !== 408;
    throw new EmailSendError(`SendGrid answered ${status}: ${sendGridMessage(text)}`, permanent);
  }
}

function sendGridMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { errors?: Array<{ message?: unknown; field?: unknown }> };
    const messages = (parsed.errors ?? []).map((e) => `${String(e.message ?? '')}${e.field ? ` (${String(e.field)})` : ''}`);
    if (messages.length > 0) return messages.join('; ');
  } catch {
    // Not JSON: fall through to the raw text, shortened.
  }
  return text.slice(0, 200);
}
