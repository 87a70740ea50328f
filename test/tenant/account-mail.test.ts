// Tests the account-mail queue: nothing about the address is looked at during the caller's turn; the bound; stop.
import t from 'tap';
import { AppError } from '../../src/errors.js';
import type { EmailMessage } from '../../src/delivery/outbound/email.js';
import { createLogger } from '../../src/log.js';
import { AccountMail } from '../../src/tenant/account-mail.js';

function setup(capacity?: number) {
  const lookups: string[] = [];
  const sent: EmailMessage[] = [];
  const mail = new AccountMail({
    transport: { send: async (msg) => void sent.push(msg) },
    from: 'no-reply@plait.test',
    publicUrl: () => 'http://plait.test',
    ownerEmails: { issueLink: async (workspaceId, purpose) => `${purpose}-${workspaceId}` },
    workspaces: {
      idForEmail: (email) => {
        lookups.push(email);
        return email === 'owner@example.com' ? 'ws_1' : undefined;
      },
    },
    log: createLogger('silent'),
    verificationLinkTtlMs: 86_400_000,
    loginLinkTtlMs: 900_000,
    ...(capacity === undefined ? {} : { capacity }),
  });
  return { mail, lookups, sent };
}

t.test("a login-link request does no lookup during the caller's turn, for known and unknown addresses alike", async (t) => {
  const { mail, lookups, sent } = setup();
  mail.requestLoginLink('owner@example.com', 'http://localhost/');
  mail.requestLoginLink('nobody@example.com', 'http://localhost/');
  t.same(lookups, [], 'no lookup before the caller has answered');
  await mail.idle();
  t.same(lookups, ['owner@example.com', 'nobody@example.com']);
  t.equal(sent.length, 1, 'one email, to the owner');
  t.same(sent[0]?.to, ['owner@example.com']);
  t.match(sent[0]?.text, 'http://plait.test/email/sign-in?token=login-ws_1');
  t.match(sent[0]?.text, '15 minutes');
});

t.test('past its capacity the queue refuses with RESOURCE_EXHAUSTED, whatever the address', async (t) => {
  const { mail } = setup(2);
  mail.requestLoginLink('owner@example.com', 'http://localhost/');
  mail.requestLoginLink('nobody@example.com', 'http://localhost/');
  const refused = (() => {
    try {
      mail.requestLoginLink('third@example.com', 'http://localhost/');
      return undefined;
    } catch (error) {
      return error;
    }
  })();
  t.ok(refused instanceof AppError && refused.status === 'RESOURCE_EXHAUSTED');
  await mail.idle();
  mail.requestLoginLink('third@example.com', 'http://localhost/');
  t.pass('room again once the queue has drained');
  await mail.stop(1000);
  t.throws(() => mail.requestLoginLink('late@example.com', 'http://localhost/'), { name: 'AppError', message: /shutting down/ }, 'refused after stop');
});
