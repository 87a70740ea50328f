import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import t, { type Test } from 'tap';
import { AppError } from '../../src/errors.js';
import { checkContinueUrl, isDisposableEmail } from '../../src/tenant/email-rules.js';

const CONSOLE = ['https://console.example.com'];

function refused(t: Test, url: string, consoleOrigins = CONSOLE): void {
  try {
    checkContinueUrl(url, consoleOrigins);
    t.fail(`${url} was accepted`);
  } catch (error) {
    t.ok(error instanceof AppError && error.status === 'INVALID_ARGUMENT', `${url} is INVALID_ARGUMENT`);
    t.match((error as Error).message, /^data\.continueUrl/, 'the message names the field');
  }
}

// Accepted continue URLs.
t.test('continueUrl on the console origin is accepted', async (t) => {
  t.equal(checkContinueUrl('https://console.example.com/welcome?x=1', CONSOLE), 'https://console.example.com/welcome?x=1');
});
t.test('continueUrl on http://localhost with any port is accepted', async (t) => {
  t.equal(checkContinueUrl('http://localhost:3000/after-login', CONSOLE), 'http://localhost:3000/after-login');
});
t.test('continueUrl on https://localhost is accepted', async (t) => {
  t.ok(checkContinueUrl('https://localhost/', []));
});
t.test('continueUrl on a loopback literal is accepted (the same machine as localhost)', async (t) => {
  t.ok(checkContinueUrl('http://127.0.0.1:5173/', []));
  t.ok(checkContinueUrl('http://[::1]:5173/', []));
});
t.test('continueUrl host comparison ignores case (URLs normalize it)', async (t) => {
  t.ok(checkContinueUrl('https://CONSOLE.example.com/x', CONSOLE));
  t.ok(checkContinueUrl('http://LOCALHOST:8080/', []));
});

// Refused continue URLs, one test each.
t.test('continueUrl localhost.evil.example is refused', async (t) => refused(t, 'http://localhost.evil.example/'));
t.test('continueUrl evil.example/localhost is refused', async (t) => refused(t, 'https://evil.example/localhost'));
t.test('continueUrl evil.example?next=localhost is refused', async (t) => refused(t, 'https://evil.example/?next=http://localhost'));
t.test('continueUrl localhost@evil.example (user info) is refused', async (t) => refused(t, 'http://localhost@evil.example/'));
t.test('continueUrl with user info on an allowed host is refused', async (t) => refused(t, 'https://user:pw@console.example.com/'));
t.test('continueUrl on a subdomain of localhost is refused', async (t) => refused(t, 'http://evil.localhost/'));
t.test('continueUrl on localhost. (trailing dot) is refused', async (t) => refused(t, 'http://localhost./'));
t.test('continueUrl on a look-alike console domain is refused', async (t) => refused(t, 'https://console.example.com.evil.example/'));
t.test('continueUrl on a subdomain of the console domain is refused', async (t) => refused(t, 'https://evil.console.example.com/'));
t.test('continueUrl on the console host with another scheme is refused', async (t) => refused(t, 'http://console.example.com/'));
t.test('continueUrl on the console host with another port is refused', async (t) => refused(t, 'https://console.example.com:8443/'));
t.test('continueUrl with a javascript: scheme is refused', async (t) => refused(t, 'javascript:alert(1)//localhost'));
t.test('continueUrl with a file: scheme is refused', async (t) => refused(t, 'file://localhost/etc/passwd'));
t.test('continueUrl that is relative is refused', async (t) => refused(t, '/welcome'));
t.test('continueUrl that is not a URL is refused', async (t) => refused(t, 'not a url'));
t.test('continueUrl protocol-relative is refused', async (t) => refused(t, '//localhost/x'));
t.test('continueUrl on the console domain when no CONSOLE_ORIGIN is configured is refused', async (t) =>
  refused(t, 'https://console.example.com/', []));
t.test('continueUrl with a decimal IP is not localhost unless it is loopback', async (t) => refused(t, 'http://2130706434/'));

// Disposable domains, one test each.
t.test('a listed disposable domain is disposable', async (t) => t.equal(isDisposableEmail('x@mailinator.com'), true));
t.test('a subdomain of a disposable domain is disposable', async (t) => t.equal(isDisposableEmail('x@inbox.mailinator.com'), true));
t.test('a deeper subdomain of a disposable domain is disposable', async (t) => t.equal(isDisposableEmail('x@a.b.yopmail.com'), true));
t.test('disposable domains match whatever the case', async (t) => t.equal(isDisposableEmail('X@MailInator.COM'), true));
t.test('a trailing dot does not hide a disposable domain', async (t) => t.equal(isDisposableEmail('x@mailinator.com.'), true));
t.test('an ordinary domain is not disposable', async (t) => t.equal(isDisposableEmail('owner@example.com'), false));
t.test('a domain that merely ends like a disposable one is not disposable', async (t) => t.equal(isDisposableEmail('x@plainmailinator.com'), false));

// The list is read from mailchecker's file at each check (nothing kept): it must agree with the package's own Set.
t.test('the file scan agrees with mailchecker on a sample of its list and on unlisted domains', async (t) => {
  const require = createRequire(import.meta.url);
  t.match(readFileSync(require.resolve('mailchecker'), 'latin1'), /var blacklist\s+= new Set\(\["/, 'the file still has the shape the scan reads (else it falls back to the Set)');
  const listed = [...(require('mailchecker') as { blacklist(): ReadonlySet<string> }).blacklist()];
  t.ok(listed.length > 10_000, `${listed.length} listed domains`);
  const sample = [listed[0] ?? '', listed[listed.length - 1] ?? '', ...listed.filter((_, i) => i % 997 === 0)];
  for (const domain of sample) t.equal(isDisposableEmail(`x@${domain}`), true, `${domain} is disposable`);
  for (const domain of ['example.com', 'plait.dev', 'gmail.com', 'b.example.org']) t.equal(isDisposableEmail(`x@${domain}`), false, `${domain} is not`);
  t.equal(isDisposableEmail('x@'), false, 'an empty domain is not listed');
});
