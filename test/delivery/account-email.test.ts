// Tests the account-email channel on a real store and delivery runner with a manual clock: lookups after the answer, retries with a fresh link, the verified-meanwhile skip.
import t, { type Test } from 'tap';
import { AccountEmailChannel } from '../../src/delivery/channels/account-email.js';
import { ManualClock } from '../../src/delivery/clock.js';
import { EmailSendError } from '../../src/delivery/outbound/email.js';
import { DeliveryQueue, type ChannelName } from '../../src/delivery/queue.js';
import { DeliveryRunner, type ChannelRunner } from '../../src/delivery/runner.js';
import type { EmailMessage } from '../../src/email-message.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { AccountMail } from '../../src/tenant/account-mail.js';

/** The other channels have no job here; one that ran would fail the job for good, which the tests would see. */
const noJobs: ChannelRunner = { retryDelaysMs: [], attempt: async () => ({ ok: false, error: 'no job of this channel in this test', permanent: true }) };

function setup(t: Test) {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const queue = new DeliveryQueue(store);
  const clock = new ManualClock(Date.now());
  const sent: EmailMessage[] = [];
  /** Every message handed to the transport, refused ones included. */
  const attempted: EmailMessage[] = [];
  const lookups: string[] = [];
  const links: string[] = [];
  const verified = new Set<string>();
  const failures: EmailSendError[] = [];
  const channel = new AccountEmailChannel({
    queue,
    clock,
    transport: {
      send: async (message) => {
        attempted.push(message);
        const failure = failures.shift();
        if (failure !== undefined) throw failure;
        sent.push(message);
      },
    },
    from: 'no-reply@plait.test',
    fromName: 'Plait',
    publicUrl: () => 'http://plait.test',
    ownerEmails: {
      issueLink: async (workspaceId, purpose) => {
        const token = `${purpose}-${workspaceId}-${links.length + 1}`;
        links.push(token);
        return token;
      },
      isVerified: (workspaceId) => verified.has(workspaceId),
    },
    workspaces: {
      idForEmail: (email) => {
        lookups.push(email);
        return email === 'owner@example.com' ? 'ws_1' : undefined;
      },
    },
    log: createLogger('silent'),
    verificationLinkTtlMs: 7 * 86_400_000,
    loginLinkTtlMs: 900_000,
  });
  const channels: Record<ChannelName, ChannelRunner> = { email: noJobs, webhook: noJobs, advancedWebhook: noJobs, notification: noJobs, account: channel };
  const runner = new DeliveryRunner({ queue, channels, clock, log: createLogger('silent') });
  return { store, queue, clock, runner, mail: new AccountMail(store, channel), sent, attempted, lookups, links, verified, failures };
}

t.test('a sign-in link request is committed with no lookup; the lookup and the send come when the job runs', async (t) => {
  const { queue, runner, mail, sent, lookups } = setup(t);
  await mail.requestLoginLink('owner@example.com', 'http://localhost/');
  await mail.requestLoginLink('nobody@example.com', 'http://localhost/');
  t.same(lookups, [], 'nothing about either address was looked at before the answer');
  t.equal(queue.counts().pending, 2, 'both requests are committed jobs');
  await runner.drain();
  t.same(lookups.sort(), ['nobody@example.com', 'owner@example.com']);
  t.equal(sent.length, 1, 'one email, to the owner; none to the stranger');
  t.same(sent[0]?.to, ['owner@example.com']);
  t.equal(sent[0]?.from, 'no-reply@plait.test');
  t.equal(sent[0]?.fromName, 'Plait');
  t.match(sent[0]?.text, 'http://plait.test/email/sign-in?token=login-ws_1-1');
  t.match(sent[0]?.text, '15 minutes');
  t.same(queue.counts(), { pending: 0, delivered: 0, failed: 0, cancelled: 0 }, "both jobs are done, the stranger's too, and their rows are gone (they held the addresses)");
});

t.test('a refused send is tried again 5 s later with a fresh link; a permanent refusal ends it', async (t) => {
  const { store, queue, clock, runner, mail, sent, attempted, links, failures } = setup(t);
  await store.transaction((tx) => mail.verificationIn(tx, { id: 'ws_1', ownerEmail: 'owner@example.com', workspaceName: 'Acme <Docs>' }));
  failures.push(new EmailSendError('SMTP send failed: 451 try later', false));
  await runner.drain();
  t.equal(sent.length, 0, 'the first attempt was refused');
  t.equal(links.length, 1, 'it had issued a link');
  clock.advance(4_999);
  await runner.drain();
  t.equal(sent.length, 0, 'nothing 1 ms before the retry');
  clock.advance(1);
  await runner.drain();
  t.equal(sent.length, 1, 'the retry went out on time');
  t.match(sent[0]?.text, 'token=verify-ws_1-2', 'with a new link (the first one is void, replaced by this one)');
  t.match(sent[0]?.html, 'Acme &lt;Docs&gt;', 'the workspace name is escaped in the HTML part');
  t.match(sent[0]?.text, '7 days');

  await store.transaction((tx) => mail.verificationIn(tx, { id: 'ws_2', ownerEmail: 'owner2@example.com', workspaceName: 'Two' }));
  failures.push(new EmailSendError('SMTP send failed: 550 no such user', true));
  const before = attempted.length;
  await runner.drain();
  clock.advance(2 * 3_600_000);
  await runner.drain();
  t.equal(attempted.length, before + 1, 'a permanent refusal is not tried again');
  t.equal(queue.counts().pending, 0, 'and its job is over');
});

t.test('every attempt of a job carries the same Message-ID, so a receiver can drop a copy sent again after a crash', async (t) => {
  const { store, clock, runner, mail, attempted, failures } = setup(t);
  await store.transaction((tx) => mail.verificationIn(tx, { id: 'ws_1', ownerEmail: 'owner@example.com', workspaceName: 'One' }));
  await store.transaction((tx) => mail.verificationIn(tx, { id: 'ws_2', ownerEmail: 'owner2@example.com', workspaceName: 'Two' }));
  failures.push(new EmailSendError('SMTP send failed: 451', false), new EmailSendError('SMTP send failed: 451', false));
  await runner.drain();
  clock.advance(5_000);
  await runner.drain();
  t.equal(attempted.length, 4, 'two refused attempts, then two sent');
  const idsOf = (to: string): Array<string | undefined> => attempted.filter((message) => message.to[0] === to).map((message) => message.messageId);
  const [first, second] = idsOf('owner@example.com');
  t.match(first, /^<[0-9a-f]{32}@plait\.test>$/, "a Message-ID on the sender's domain");
  t.equal(second, first, 'the retry repeats it');
  t.not(idsOf('owner2@example.com')[0], first, 'another job has its own');
});

t.test('a verification email is not sent once the address was verified meanwhile (a sign-in link proves it too)', async (t) => {
  const { store, queue, runner, mail, sent, links, verified } = setup(t);
  await store.transaction((tx) => mail.verificationIn(tx, { id: 'ws_1', ownerEmail: 'owner@example.com', workspaceName: 'One' }));
  verified.add('ws_1');
  await runner.drain();
  t.equal(sent.length, 0, 'nothing sent');
  t.equal(links.length, 0, 'no link issued');
  t.same(queue.counts(), { pending: 0, delivered: 0, failed: 0, cancelled: 0 }, 'the job is done and removed');
});
