import { SignJWT, createLocalJWKSet, decodeProtectedHeader, generateKeyPair, jwtVerify } from 'jose';
import t, { type Test } from 'tap';
import { Secrets } from '../../src/auth/secrets.js';
import { USER_TOKEN_LIFETIME_SECONDS, UserTokens, VERIFIED_TOKENS_MAX, type UserClaims } from '../../src/auth/user-tokens.js';
import { Store } from '../../src/store/env.js';
import { DB } from '../../src/store/keys.js';

const HOUR = 60 * 60 * 1000;
const claims: Omit<UserClaims, 'expiresAt'> = {
  userId: 'u1',
  apiKey: 'key1',
  userProperties: { name: 'Ann', email: 'ann@example.com' },
  resources: [{ type: 'organization', id: 'org1', accessRole: 'viewer' }],
};

/** A store, secrets and a settable clock for one test. */
function setup(t: Test) {
  const dir = t.testdir();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  const secrets = new Secrets(Buffer.alloc(32, 7));
  const clock = { now: Date.UTC(2030, 0, 1) };
  return { store, secrets, clock, open: (maxKeyAgeMs?: number) =>
    UserTokens.open(store, secrets, { now: () => clock.now, ...(maxKeyAgeMs === undefined ? {} : { maxKeyAgeMs }) }) };
}

async function rejects(t: Test, promise: Promise<unknown>, message: RegExp): Promise<void> {
  await t.rejects(promise, { name: 'AppError', status: 'UNAUTHENTICATED', message }, `refused as UNAUTHENTICATED, ${String(message)}`);
}

t.test('a minted token carries user id, API key, user properties and resources, and verifies with jose against the JWKS', async (t) => {
  const { open, clock } = setup(t);
  const tokens = await open();
  const token = await tokens.sign(claims);
  t.equal(decodeProtectedHeader(token).kid, tokens.currentKid);
  const { payload } = await jwtVerify(token, createLocalJWKSet(tokens.jwks()), { currentDate: new Date(clock.now) });
  t.equal(payload.sub, 'u1');
  t.equal(payload['userId'], 'u1');
  t.equal(payload['apiKey'], 'key1');
  t.same(payload['user'], claims.userProperties);
  t.same(payload['permissions'], { resources: claims.resources });
  t.equal(payload.exp, Math.floor(clock.now / 1000) + USER_TOKEN_LIFETIME_SECONDS);
  const verified = await tokens.verify(token);
  t.same({ ...verified }, { ...claims, expiresAt: payload.exp });
});

t.test('an expired token is refused', async (t) => {
  const { open, clock } = setup(t);
  const tokens = await open();
  const token = await tokens.sign(claims);
  clock.now += 47 * HOUR;
  t.equal((await tokens.verify(token)).userId, 'u1');
  t.ok(tokens.remembers(token), 'remembered once verified');
  clock.now += 2 * HOUR;
  await rejects(t, tokens.verify(token), /expired/);
  t.notOk(tokens.remembers(token), 'an expired token is forgotten');
});

t.test('a tampered token is refused', async (t) => {
  const { open } = setup(t);
  const tokens = await open();
  const [header, payload, signature] = (await tokens.sign(claims)).split('.');
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()), sub: 'admin' })).toString('base64url');
  await rejects(t, tokens.verify(`${header}.${forged}.${signature}`), /invalid/);
});

t.test('a token signed by a foreign key is refused, even when it claims a known kid', async (t) => {
  const { open, clock } = setup(t);
  const tokens = await open();
  const { privateKey } = await generateKeyPair('ES256');
  const now = Math.floor(clock.now / 1000);
  const foreign = (kid: string) =>
    new SignJWT({ apiKey: 'key1' })
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer('plait')
      .setSubject('u1')
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey);
  await rejects(t, tokens.verify(await foreign(tokens.currentKid)), /invalid/);
  await rejects(t, tokens.verify(await foreign('someone-else')), /not signed by this server/);
});

t.test('rotation keeps tokens of the retired key valid until they expire, then drops that key', async (t) => {
  const { open, clock, store } = setup(t);
  const tokens = await open();
  const oldKid = tokens.currentKid;
  const oldToken = await tokens.sign(claims);
  clock.now += HOUR;
  const newKid = await tokens.rotate();
  t.not(newKid, oldKid);
  t.equal(decodeProtectedHeader(await tokens.sign(claims)).kid, newKid, 'new tokens use the new key');
  t.same(tokens.jwks().keys.map((key) => key.kid).sort(), [oldKid, newKid].sort(), 'the JWKS serves both keys');
  t.equal((await tokens.verify(oldToken)).userId, 'u1', 'old token still verifies');
  const reopened = await open();
  t.equal(reopened.currentKid, newKid, 'a restart signs with the new key');
  t.equal((await reopened.verify(oldToken)).userId, 'u1', 'and still verifies the old token');
  clock.now += 48 * HOUR + 1000;
  await rejects(t, tokens.verify(oldToken), /expired|not signed/);
  t.same(tokens.jwks().keys.map((key) => key.kid), [newKid], 'the retired key leaves the JWKS once its tokens have expired');
  const later = await open();
  const newest = await later.rotate();
  const stored = Array.from(store.records<{ kid: string }>(DB.signingKeys).getRange(), ({ value }) => value.kid).sort();
  t.same(stored, [newKid, newest].sort(), 'and the next rotation deletes it from the store');
});

t.test('a signing key older than the maximum age is rotated at start', async (t) => {
  const { open, clock } = setup(t);
  const first = (await open()).currentKid;
  clock.now += 10 * HOUR;
  t.equal((await open(20 * HOUR)).currentKid, first);
  clock.now += 11 * HOUR;
  t.not((await open(20 * HOUR)).currentKid, first);
});

t.test('cluster mode: a token signed with a key this node has not loaded verifies after one catch-up', async (t) => {
  const { store, secrets, clock } = setup(t);
  const now = (): number => clock.now;
  const signer = await UserTokens.open(store, secrets, { now });
  let catchUps = 0;
  const follower = await UserTokens.open(store, secrets, { now, catchUp: async () => (catchUps++, true) });
  const alone = await UserTokens.open(store, secrets, { now });
  // The signer rotates: its new key is in the store, which the others have not reloaded.
  await signer.rotate();
  const token = await signer.sign(claims);
  t.equal((await follower.verify(token)).userId, 'u1', 'verified after catching up and reloading the keys');
  t.equal(catchUps, 1, 'one catch-up');
  t.equal((await follower.verify(token)).userId, 'u1');
  t.equal(catchUps, 1, 'a known key needs none');
  await rejects(t, alone.verify(token), /not signed by this server/);
});

t.test('a verified token is remembered: its signature is not checked again, everything else is, and the memory is bounded', async (t) => {
  const { open, clock } = setup(t);
  const tokens = await open();
  const token = await tokens.sign(claims);
  t.equal(tokens.verifiedTokens, 0);
  const first = await tokens.verify(token);
  t.equal(tokens.verifiedTokens, 1, 'remembered once verified');
  t.same(await tokens.verify(token), first, 'the same claims from memory');
  t.equal(tokens.verifiedTokens, 1);

  // Another signature over the same header and payload is another text: checked, and refused.
  const [header, payload, signature = ''] = token.split('.');
  const flipped = `${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
  await rejects(t, tokens.verify(`${header}.${payload}.${flipped}`), /invalid/);
  t.equal(tokens.verifiedTokens, 1, 'a refused token is not remembered');

  // The key's lapse still refuses a remembered token: rotate, then pass the old key's last possible token's expiry.
  await tokens.rotate();
  t.equal((await tokens.verify(token)).userId, 'u1', 'a retired key still verifies its tokens');
  clock.now += USER_TOKEN_LIFETIME_SECONDS * 1000 + 1000;
  await rejects(t, tokens.verify(token), /not signed by this server/);
  t.notOk(tokens.remembers(token), 'a remembered token that fails is forgotten');

  // Bounded: the least recently used is dropped first.
  const fresh = await tokens.sign(claims);
  await tokens.verify(fresh);
  const many: string[] = [];
  for (let i = 0; i < VERIFIED_TOKENS_MAX; i++) many.push(await tokens.sign({ ...claims, userId: `u${i}` }));
  await tokens.verify(many[0] ?? '');
  await tokens.verify(fresh);
  for (const other of many.slice(1)) await tokens.verify(other);
  t.equal(tokens.verifiedTokens, VERIFIED_TOKENS_MAX, 'never more than VERIFIED_TOKENS_MAX');
  t.ok(tokens.remembers(fresh), 'the token used again after many[0] is kept');
  t.notOk(tokens.remembers(many[0] ?? ''), 'the least recently used is dropped');
  t.equal((await tokens.verify(fresh)).userId, 'u1');
});
