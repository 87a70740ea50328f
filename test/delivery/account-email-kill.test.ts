// Tests that account emails are committed with the request that causes them: after kill -9 the verification and the sign-in link still go out, and their links work.
import t from 'tap';
import { ApiClient } from '../helpers/api.js';
import { startServerProcess } from '../helpers/process.js';
import { startSmtpSink, type CaughtMail } from '../helpers/smtp-sink.js';

/** The one-time link in a caught mail's text. */
function linkIn(mail: CaughtMail | undefined, path: string): string {
  const match = new RegExp(`http://\\S+${path}\\?token=[\\w%-]+`).exec(mail?.parsed.text ?? '');
  if (match === null) throw new Error(`no ${path} link in ${mail?.parsed.text ?? 'no mail'}`);
  return match[0];
}

/** Presses the button of a link's page (POSTs its token), as the owner does. */
async function press(link: string): Promise<number> {
  const html = await (await fetch(link)).text();
  const token = /name="token" value="([^"]*)"/.exec(html)?.[1] ?? '';
  const action = new URL(/action="([^"]+)"/.exec(html)?.[1] ?? '', link);
  return (await fetch(action, { method: 'POST', body: new URLSearchParams({ token }), redirect: 'manual' })).status;
}

t.test('kill -9 while the mail server refuses: the verification and the sign-in link asked for before it go out after the restart', async (t) => {
  const sink = await startSmtpSink(t);
  // Every attempt of the first process fails with a transient reply, so nothing can be sent before the kill.
  sink.failNext(1_000_000, 451);
  const env = { DATA_DIR: t.testdir(), DEV_BOOTSTRAP: 'false', SMTP_URL: sink.url, EMAIL_FROM: 'Plait <no-reply@plait.test>' };
  const first = await startServerProcess(t, env);
  const api = new ApiClient(`http://127.0.0.1:${first.port}`);
  await api.createWorkspace('owner-kill@example.com');
  const asked = await api.post('/v2/workspace/email/send-login-link', { email: 'owner-kill@example.com', continueUrl: 'http://localhost:3000/' });
  t.equal(asked.status, 200, 'the sign-in link request was answered');
  first.child.kill('SIGKILL');
  t.equal(await first.exited, 'SIGKILL');
  t.equal(sink.mails.length, 0, 'nothing was sent before the kill');

  sink.failNext(0, 451);
  const second = await startServerProcess(t, env);
  // The first attempts failed (or were cut off by the kill): the retry is due within 5 s of them.
  const mails = await sink.waitFor(2);
  const subjects = mails.map((mail) => mail.parsed.subject).sort();
  t.same(subjects, ['Verify your email address for Plait', 'Your Plait sign-in link'], 'both emails went out after the restart');
  t.ok(
    mails.every((mail) => mail.envelopeTo.join() === 'owner-kill@example.com'),
    'to the owner',
  );
  const verify = mails.find((mail) => mail.parsed.subject === 'Verify your email address for Plait');
  t.equal(await press(linkIn(verify, '/email/verify')), 200, 'the verification link issued by the new process works');
  const api2 = new ApiClient(`http://127.0.0.1:${second.port}`);
  const status = await api2.post<{ verified: boolean }>('/v2/workspace/email/status', { ownerEmail: 'owner-kill@example.com' });
  t.equal(status.body.result?.data.verified, true, 'the address is verified');
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0, 'the second process stops cleanly');
});
