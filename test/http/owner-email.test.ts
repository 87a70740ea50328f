// Tests owner email verification, Get Email Verification Status and Send Login Link end to end, through a real SMTP sink on loopback.
import t, { type Test } from 'tap';
import type { Config } from '../../src/config.js';
import { SmtpEmailTransport, type EmailMessage, type EmailTransport } from '../../src/delivery/outbound/email.js';
import { devBootstrap } from '../../src/bootstrap.js';
import { createLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { ApiClient, apiKeyHeaders, type Credentials } from '../helpers/api.js';
import { testConfig } from '../helpers/server.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { editorOf, rawSocket, roomName, syncBase, upgradeStatus, userToken } from '../helpers/sync.js';

const HOUR = 3_600_000;

interface Env {
  readonly server: RunningServer;
  readonly api: ApiClient;
  readonly url: string;
  readonly sink: SmtpSink;
  readonly advance: (ms: number) => void;
  readonly now: () => number;
}

async function start(t: Test, overrides: Partial<Config> = {}, transport?: (sink: SmtpSink) => EmailTransport): Promise<Env> {
  const sink = await startSmtpSink(t);
  let time = Date.now();
  const config = testConfig(t.testdir(), { smtpUrl: sink.url, emailVerificationGraceMs: HOUR, consoleOrigins: ['https://console.example.com'], ...overrides });
  const server = await startServer(config, createLogger('silent'), {
    clock: { now: () => time },
    ...(transport === undefined ? {} : { emailTransport: transport(sink) }),
  });
  t.teardown(() => server.stop());
  const url = `http://127.0.0.1:${server.port}`;
  return { server, api: new ApiClient(url), url, sink, advance: (ms) => (time += ms), now: () => time };
}

/** The one-time link of the `index`-th caught mail, from its text part. */
function linkIn(sink: SmtpSink, index: number, path: '/email/verify' | '/email/sign-in'): string {
  const text = sink.mails[index]?.parsed.text ?? '';
  const match = new RegExp(`http://\\S+${path}\\?token=[\\w%-]+`).exec(text);
  if (match === null) throw new Error(`no ${path} link in mail ${index}: ${text}`);
  return match[0];
}

/** Follows a link as a person does: GET the page (which redeems nothing), then press its button (POST the form). */
async function follow(link: string): Promise<Response> {
  const page = await fetch(link);
  const html = await page.text();
  const token = /name="token" value="([^"]*)"/.exec(html)?.[1] ?? '';
  const action = new URL(/action="([^"]+)"/.exec(html)?.[1] ?? '', link);
  return fetch(action, { method: 'POST', body: new URLSearchParams({ token }), redirect: 'manual' });
}

async function status(api: ApiClient, ownerEmail: string): Promise<{ code: number; verified: boolean | undefined; message: string | undefined }> {
  const reply = await api.post<{ verified: boolean }>('/v2/workspace/email/status', { ownerEmail });
  return { code: reply.status, verified: reply.body.result?.data.verified, message: reply.body.result?.message ?? reply.body.error?.status };
}

const keyWorks = async (api: ApiClient, credentials: Credentials): Promise<number> =>
  (await api.post('/v2/workspace/apikeyconfig/get', {}, apiKeyHeaders(credentials))).status;

t.test('verification end to end: mail with a link, keys expire after the grace, the link revives them, a used link is refused', async (t) => {
  const { api, sink, advance, url } = await start(t);
  const credentials = await api.createWorkspace('verify-me@example.com');
  const [mail] = await sink.waitFor(1);
  t.same(mail?.envelopeTo, ['verify-me@example.com']);
  t.equal(mail?.parsed.subject, 'Verify your email address for Plait');
  t.equal(mail?.parsed.from?.value[0]?.address, 'no-reply@plait.localhost', 'sender from EMAIL_FROM');
  const link = linkIn(sink, 0, '/email/verify');
  t.match(mail?.parsed.html, link.replace(/&/g, '&amp;'), 'the HTML part carries the same link');

  t.same(await status(api, 'verify-me@example.com'), { code: 200, verified: false, message: 'Email not yet verified' });
  t.equal(await keyWorks(api, credentials), 200, 'keys work during the grace period');
  const room = { organizationId: 'org-v', documentId: 'doc-v', editorId: 'main' };
  const syncUrl = `${syncBase(url)}/${roomName(room)}?token=${await userToken(api, credentials, [editorOf(room)])}`;
  advance(HOUR);
  const expired = await api.post('/v2/workspace/apikeyconfig/get', {}, apiKeyHeaders(credentials));
  t.equal(expired.status, 403, 'after the grace period the key has expired');
  t.equal(expired.body.error?.status, 'PERMISSION_DENIED');
  t.match(expired.body.error?.message, /email address is not verified/);
  t.equal(await upgradeStatus(syncUrl), 403, 'a user token issued earlier opens no sync connection on an expired key');

  const page = await fetch(link);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.equal(page.headers.get('x-frame-options'), 'DENY', 'the confirm button cannot be framed');
  t.match(await page.text(), /<form method="post" action="\/email\/verify">/);
  t.same((await status(api, 'verify-me@example.com')).verified, false, 'opening the link (a GET, as mail scanners do) verifies nothing');

  const confirmed = await follow(link);
  t.equal(confirmed.status, 200);
  t.match(await confirmed.text(), /Email verified/);
  t.same(await status(api, 'Verify-Me@Example.com'), { code: 200, verified: true, message: 'Email verified and workspace reactivated' });
  t.equal(await keyWorks(api, credentials), 200, 'the expired keys work again');
  (await rawSocket(syncUrl)).socket.terminate();
  t.pass('and sync opens again');

  const again = await follow(link);
  t.equal(again.status, 400, 'a used link is refused');
  t.match(await again.text(), /invalid, has expired or was already used/);
});

t.test('an expired verification link is refused and verifies nothing', async (t) => {
  const { api, sink, advance, server } = await start(t);
  await api.createWorkspace('late@example.com');
  await sink.waitFor(1);
  advance(server.services.config.verificationLinkTtlMs);
  const refused = await follow(linkIn(sink, 0, '/email/verify'));
  t.equal(refused.status, 400);
  t.match(await refused.text(), /has expired/);
  t.same((await status(api, 'late@example.com')).verified, false);
});

t.test('a forged or garbled token is refused like a used one; the page escapes what it echoes', async (t) => {
  const { url } = await start(t);
  const page = await (await fetch(`${url}/email/verify?token=${encodeURIComponent('"><script>alert(1)</script>')}`)).text();
  t.notMatch(page, '<script>', 'no markup from the query reaches the page');
  t.match(page, 'value="&quot;&gt;&lt;script&gt;', 'what it echoes is escaped (one escaper for emails and pages, src/delivery/templates.ts)');
  const foreign = await fetch(`${url}/email/sign-in`, { method: 'POST', body: new URLSearchParams({ token: 'x' }), headers: { origin: 'https://evil.example' } });
  t.equal(foreign.status, 403, 'a form posted from another site is refused');
  for (const token of ['', 'x'.repeat(43), 'a'.repeat(5000)]) {
    const reply = await fetch(`${url}/email/verify`, { method: 'POST', body: new URLSearchParams({ token }) });
    t.equal(reply.status, reply.status === 413 ? 413 : 400, `token of ${token.length} characters`);
  }
});

t.test('email/status: unknown email is NOT_FOUND; a bad email is INVALID_ARGUMENT', async (t) => {
  const { api } = await start(t);
  const unknown = await api.post('/v2/workspace/email/status', { ownerEmail: 'nobody@example.com' });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error?.status, 'NOT_FOUND');
  const bad = await api.post('/v2/workspace/email/status', { ownerEmail: 'nope' });
  t.equal(bad.status, 400);
  t.match(bad.body.error?.message, /data\.ownerEmail/);
});

t.test('send-login-link: known and unknown addresses get the same answer; only the owner gets a one-time sign-in link', async (t) => {
  const { api, sink, server } = await start(t);
  await api.createWorkspace('owner-login@example.com');
  await sink.waitFor(1);
  const continueUrl = 'https://console.example.com/after?tab=keys';
  const known = await api.post('/v2/workspace/email/send-login-link', { email: 'owner-login@example.com', continueUrl });
  const unknown = await api.post('/v2/workspace/email/send-login-link', { email: 'stranger@example.com', continueUrl });
  t.equal(known.status, 200);
  t.equal(unknown.status, known.status, 'same status');
  t.same(unknown.body, known.body, 'same body');
  t.same(known.body.result?.data, null);
  t.same(
    [...unknown.headers.keys()].filter((name) => name !== 'x-request-id' && name !== 'date'),
    [...known.headers.keys()].filter((name) => name !== 'x-request-id' && name !== 'date'),
    'same headers',
  );
  await server.services.delivery.runner.idle();
  t.equal(sink.mails.length, 2, 'one sign-in mail, to the owner; none to the stranger');
  t.same(sink.mails[1]?.envelopeTo, ['owner-login@example.com']);
  t.equal(sink.mails[1]?.parsed.subject, 'Your Plait sign-in link');

  const signedIn = await follow(linkIn(sink, 1, '/email/sign-in'));
  t.equal(signedIn.status, 303, 'the button redirects to the console');
  const location = new URL(signedIn.headers.get('location') ?? '');
  t.equal(`${location.origin}${location.pathname}${location.search}`, continueUrl);
  const fragment = new URLSearchParams(location.hash.slice(1));
  const headers = { 'x-svc-workspace-id': fragment.get('workspaceId') ?? '', 'x-svc-workspace-auth-token': fragment.get('workspaceAuthToken') ?? '' };
  const workspace = await api.post<{ owner: { email: string } }>('/v2/workspace/get', {}, headers);
  t.equal(workspace.body.result?.data.owner.email, 'owner-login@example.com', 'the fragment carries working workspace credentials');
  t.same((await status(api, 'owner-login@example.com')).verified, true, 'signing in by email link proves the address too');
  t.equal((await follow(linkIn(sink, 1, '/email/sign-in'))).status, 400, 'the sign-in link works once');
  t.equal((await follow(linkIn(sink, 0, '/email/verify'))).status, 200, 'the verification link still works (it is another link)');
});

t.test('send-login-link answers before any email work is done (the reply cannot depend on the address)', async (t) => {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const sent: string[] = [];
  const { api, sink, server } = await start(t, {}, (sink) => {
    const smtp = new SmtpEmailTransport(sink.url);
    t.teardown(() => smtp.close());
    return {
      send: async (msg: EmailMessage) => {
        await held;
        sent.push(...msg.to);
        await smtp.send(msg);
      },
    };
  });
  await api.createWorkspace('held@example.com');
  const reply = await api.post('/v2/workspace/email/send-login-link', { email: 'held@example.com', continueUrl: 'http://localhost:3000/' });
  t.equal(reply.status, 200, 'answered while the mail transport is still blocked');
  t.same(sent, [], 'nothing was sent yet');
  release();
  await server.services.delivery.runner.idle();
  t.same(sent, ['held@example.com', 'held@example.com'], 'verification and sign-in mails went out after the reply');
  t.equal(sink.mails.length, 2);
});

t.test('send-login-link refuses bad continue URLs and disposable addresses; Create Workspace refuses disposable addresses', async (t) => {
  const { api, sink, server } = await start(t, { publicUrl: 'https://plait.example.com' });
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['/v2/workspace/email/send-login-link', { email: 'a@example.com', continueUrl: 'http://localhost.evil.example/' }, /data\.continueUrl.*not allowed/],
    ['/v2/workspace/email/send-login-link', { email: 'a@example.com', continueUrl: 'https://evil.example/localhost' }, /data\.continueUrl.*not allowed/],
    ['/v2/workspace/email/send-login-link', { email: 'a@example.com', continueUrl: 'nope' }, /data\.continueUrl must be an absolute/],
    ['/v2/workspace/email/send-login-link', { email: 'a@example.com', continueUrl: 'https://plait.example.com.evil.example/console' }, /not allowed/],
    ['/v2/workspace/email/send-login-link', { email: 'a@sub.mailinator.com', continueUrl: 'http://localhost/' }, /data\.email: this email domain is not supported/],
    ['/v2/workspace/email/send-login-link', { email: 'a@example.com' }, /continueUrl/],
    ['/v2/workspace/create', { ownerEmail: 'a@yopmail.com' }, /data\.ownerEmail: this email domain is not supported/],
  ];
  for (const [path, data, message] of cases) {
    const reply = await api.post(path, data);
    t.equal(reply.status, 400, `${path} ${JSON.stringify(data)}`);
    t.equal(reply.body.error?.status, 'INVALID_ARGUMENT');
    t.match(reply.body.error?.message, message);
  }
  await server.services.delivery.runner.idle();
  t.equal(sink.mails.length, 0, 'no mail for refused requests');
  const ownConsole = await api.post('/v2/workspace/email/send-login-link', { email: 'a@example.com', continueUrl: 'https://plait.example.com/console' });
  t.equal(ownConsole.status, 200, "this server's own console (PUBLIC_URL) is an allowed continue URL");
});

t.test('keys of a workspace created before a restart still expire; the dev workspace never does', async (t) => {
  const { api, advance, server, now } = await start(t, { emailVerificationGraceMs: 1000 });
  const credentials = await api.createWorkspace('restart@example.com');
  const exempt = await api.createWorkspace('exempt@example.com');
  await server.services.ownerEmails.exempt(exempt.workspaceId);
  // Workspaces stamps creation with the wall clock, which ran on a little past the test clock's start.
  advance(60_000);
  t.equal(await keyWorks(api, credentials), 403);
  t.equal(await keyWorks(api, exempt), 200, 'an exempt workspace (the dev one) never expires');
  await server.stop();
  const config = server.services.config;
  const again = await startServer(config, createLogger('silent'), { clock: { now } });
  t.teardown(() => again.stop());
  const api2 = new ApiClient(`http://127.0.0.1:${again.port}`);
  t.equal(await keyWorks(api2, credentials), 403, 'expiry is computed from the stored creation time');
  t.equal(again.services.ownerEmails.expiresAt(credentials.workspaceId) !== undefined, true);
  t.equal(await keyWorks(api2, exempt), 200, 'an exempt workspace keeps working after a restart');
});

t.test('EMAIL_VERIFICATION_GRACE=off: keys of unverified workspaces never expire', async (t) => {
  const { api, advance } = await start(t, { emailVerificationGraceMs: 0 });
  const credentials = await api.createWorkspace('forever@example.com');
  advance(365 * 24 * HOUR);
  t.equal(await keyWorks(api, credentials), 200);
});

t.test('the dev workspace printed at first start is exempt from expiry', async (t) => {
  const { server, advance, now } = await start(t, { emailVerificationGraceMs: 1000 });
  const config = { ...server.services.config, devBootstrap: true, port: server.port };
  const banner = await devBootstrap(config, server.services.store, server.services.workspaces, server.services.ownerEmails);
  const apiKey = /API key\s+(\S+)/.exec(banner ?? '')?.[1] ?? '';
  const authToken = /auth token\s+(\S+)\n/.exec(banner?.split('API key')[1] ?? '')?.[1] ?? '';
  // After a restart every workspace's state comes from the store (a bootstrap does not pass through Create Workspace).
  await server.stop();
  const again = await startServer(server.services.config, createLogger('silent'), { clock: { now } });
  t.teardown(() => again.stop());
  const api = new ApiClient(`http://127.0.0.1:${again.port}`);
  advance(24 * HOUR);
  const reply = await api.post('/v2/workspace/apikeyconfig/get', {}, { 'x-svc-api-key': apiKey, 'x-svc-auth-token': authToken });
  t.equal(reply.status, 200, 'the dev key works a day later');
});
