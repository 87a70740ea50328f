// Tests src/delivery/outbound/email.ts: SMTP through a real sink on loopback, the dev log transport, SendGrid v3 against a local fake.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { EmailSendError, LogEmailTransport, SendGridEmailTransport, createServerEmailTransport, parseSender, type EmailMessage } from '../../src/delivery/outbound/email.js';
import { OutboundHttp } from '../../src/delivery/outbound/http.js';
import { createLogger } from '../../src/log.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

const message: EmailMessage = {
  to: ['ana@example.com', 'bo@example.com'],
  from: 'notify@acme.test',
  fromName: 'Acme Review',
  subject: 'New comment on "Spec"',
  text: 'Ana wrote: looks good',
  html: '<p>Ana wrote: <b>looks good</b></p>',
};

t.test('SMTP_URL sends through nodemailer to a real SMTP server, with auth, text and HTML parts', async (t) => {
  const sink = await startSmtpSink(t, { user: 'plait', pass: 's3cret' });
  const transport = createServerEmailTransport({ smtpUrl: sink.url, log: createLogger('silent') });
  t.teardown(() => transport.close());
  await transport.send(message);
  const [mail] = await sink.waitFor(1);
  t.same(mail?.envelopeTo, ['ana@example.com', 'bo@example.com']);
  t.equal(mail?.parsed.subject, 'New comment on "Spec"');
  t.equal(mail?.parsed.from?.value[0]?.address, 'notify@acme.test');
  t.equal(mail?.parsed.from?.value[0]?.name, 'Acme Review');
  t.equal(mail?.parsed.text?.trim(), 'Ana wrote: looks good');
  t.equal(mail?.parsed.html, '<p>Ana wrote: <b>looks good</b></p>');
});

t.test('an SMTP 5xx is a permanent failure, a 4xx a retryable one, wrong credentials permanent', async (t) => {
  const sink = await startSmtpSink(t, { user: 'plait', pass: 's3cret' });
  const transport = createServerEmailTransport({ smtpUrl: sink.url, log: createLogger('silent') });
  t.teardown(() => transport.close());
  sink.failNext(1, 451);
  const soft = await transport.send(message).then(() => undefined, (error: unknown) => error);
  t.ok(soft instanceof EmailSendError && !soft.permanent, '451 is retryable');
  sink.failNext(1, 550);
  const hard = await transport.send(message).then(() => undefined, (error: unknown) => error);
  t.ok(hard instanceof EmailSendError && hard.permanent, '550 is permanent');
  const wrong = createServerEmailTransport({ smtpUrl: sink.url.replace('s3cret', 'nope'), log: createLogger('silent') });
  t.teardown(() => wrong.close());
  const denied = await wrong.send(message).then(() => undefined, (error: unknown) => error);
  t.ok(denied instanceof EmailSendError && denied.permanent, 'bad credentials are permanent');
  t.equal(sink.mails.length, 0, 'nothing was accepted');
});

t.test('with no SMTP_URL each email is one JSON log line', async (t) => {
  const lines: string[] = [];
  const transport = createServerEmailTransport({ smtpUrl: undefined, log: createLogger('info', {}, (line) => lines.push(line)) });
  t.ok(transport instanceof LogEmailTransport);
  await transport.send(message);
  t.equal(lines.length, 1);
  const record = JSON.parse(lines[0] ?? '{}') as { email?: EmailMessage };
  t.same(record.email?.to, message.to);
  t.equal(record.email?.subject, message.subject);
  t.equal(record.email?.html, message.html);
});

t.test('EMAIL_FROM may carry a display name', async (t) => {
  t.same(parseSender('Plait <no-reply@plait.localhost>'), { address: 'no-reply@plait.localhost', name: 'Plait' });
  t.same(parseSender('"Acme, Inc." <a@b.c>'), { address: 'a@b.c', name: 'Acme, Inc.' });
  t.same(parseSender('a@b.c'), { address: 'a@b.c' });
});

t.test('SendGrid: v3 mail/send with a Bearer key, one personalization per recipient; errors classified', async (t) => {
  const requests: Array<{ path: string; auth: string; body: unknown }> = [];
  let answer = { status: 202, body: '' };
  const fake = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', auth: req.headers.authorization ?? '', body: JSON.parse(Buffer.concat(chunks).toString()) });
      res.statusCode = answer.status;
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => fake.close(() => resolve())));
  const http = new OutboundHttp({ allowedNetworks: ['127.0.0.0/8'] });
  t.teardown(() => http.close());
  const baseUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  const sendgrid = new SendGridEmailTransport({ http, apiKey: 'SG.test', baseUrl });
  await sendgrid.send(message);
  t.equal(requests[0]?.path, '/v3/mail/send');
  t.equal(requests[0]?.auth, 'Bearer SG.test');
  t.same(requests[0]?.body, {
    personalizations: [{ to: [{ email: 'ana@example.com' }] }, { to: [{ email: 'bo@example.com' }] }],
    from: { email: 'notify@acme.test', name: 'Acme Review' },
    subject: 'New comment on "Spec"',
    content: [
      { type: 'text/plain', value: 'Ana wrote: looks good' },
      { type: 'text/html', value: '<p>Ana wrote: <b>looks good</b></p>' },
    ],
  });
  answer = { status: 401, body: JSON.stringify({ errors: [{ message: 'The provided authorization grant is invalid', field: null }] }) };
  const unauthorized = await sendgrid.send(message).then(() => undefined, (error: unknown) => error);
  t.ok(unauthorized instanceof EmailSendError && unauthorized.permanent, '401 is permanent');
  t.match(String(unauthorized), /401: The provided authorization grant is invalid/);
  answer = { status: 429, body: '' };
  const limited = await sendgrid.send(message).then(() => undefined, (error: unknown) => error);
  t.ok(limited instanceof EmailSendError && !limited.permanent, '429 is retryable');
  const guarded = new SendGridEmailTransport({ http: new OutboundHttp({ allowedNetworks: [] }), apiKey: 'k', baseUrl });
  const blocked = await guarded.send(message).then(() => undefined, (error: unknown) => error);
  t.ok(blocked instanceof EmailSendError && blocked.permanent, 'SendGrid goes through the SSRF guard like every outbound call');
});
