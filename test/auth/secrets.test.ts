import { randomBytes } from 'node:crypto';
import t from 'tap';
import { Secrets, randomId, secretEquals } from '../../src/auth/secrets.js';

t.test('sealed secrets open with the same key only, and tampering is detected', async (t) => {
  const secrets = new Secrets(randomBytes(32));
  const sealed = secrets.encrypt('token-123');
  t.not(sealed, secrets.encrypt('token-123'), 'a fresh IV every time');
  t.equal(secrets.decrypt(sealed), 'token-123');
  t.throws(() => new Secrets(randomBytes(32)).decrypt(sealed));
  const parts = sealed.split('.');
  parts[3] = Buffer.from('evil').toString('base64url');
  t.throws(() => secrets.decrypt(parts.join('.')));
});

t.test('the key file is created once and reused; SECRET_KEY overrides it', async (t) => {
  const dir = t.testdir();
  const first = Secrets.load(dir, undefined);
  const second = Secrets.load(dir, undefined);
  t.equal(second.decrypt(first.encrypt('x')), 'x');
  t.equal(first.lookupHash('abc'), second.lookupHash('abc'));
  const configured = Secrets.load(dir, randomBytes(32).toString('hex'));
  t.not(configured.lookupHash('abc'), first.lookupHash('abc'));
  t.throws(() => Secrets.load(dir, 'short'), { message: /at least 32 bytes/ });
});

t.test('helpers: constant-time equality and alphanumeric ids', async (t) => {
  t.ok(secretEquals('abc', 'abc'));
  t.notOk(secretEquals('abc', 'abd'));
  t.notOk(secretEquals('abc', 'abcd'));
  t.match(randomId(40), /^[A-Za-z0-9]{40}$/);
});
