// Test helper: a real SMTP server on loopback (smtp-server) that parses each message (mailparser) and hands it to waiters.
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { Test } from 'tap';

export interface CaughtMail {
  readonly envelopeTo: string[];
  readonly parsed: ParsedMail;
}

export interface SmtpSink {
  readonly url: string;
  readonly mails: CaughtMail[];
  /** Resolves when `count` mails in all have arrived. */
  waitFor(count: number): Promise<CaughtMail[]>;
  /** Makes the next `n` messages fail with this SMTP reply code. */
  failNext(n: number, responseCode: number): void;
}

export async function startSmtpSink(t: Test, auth?: { user: string; pass: string }): Promise<SmtpSink> {
  const mails: CaughtMail[] = [];
  const waiters: Array<{ count: number; resolve: (mails: CaughtMail[]) => void }> = [];
  let failing = 0;
  let failCode = 451;
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: auth === undefined,
    logger: false,
    onAuth(credentials, _session, callback) {
      if (auth !== undefined && credentials.username === auth.user && credentials.password === auth.pass) {
        callback(null, { user: credentials.username });
      } else {
        callback(new Error('invalid credentials'));
      }
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (parsed) => {
          if (failing > 0) {
            failing--;
            callback(Object.assign(new Error('try later'), { responseCode: failCode }));
            return;
          }
          mails.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), parsed });
          callback();
          for (const waiter of [...waiters]) {
            if (mails.length >= waiter.count) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(mails.slice());
            }
          }
        },
        (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.server.address() as AddressInfo;
  const credentials = auth === undefined ? '' : `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@`;
  return {
    url: `smtp://${credentials}127.0.0.1:${port}`,
    mails,
    waitFor: (count) => (mails.length >= count ? Promise.resolve(mails.slice()) : new Promise((resolve) => waiters.push({ count, resolve }))),
    failNext: (n, responseCode) => {
      failing = n;
      failCode = responseCode;
    },
  };
}
