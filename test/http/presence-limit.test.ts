// Tests MAX_PRESENCE_USERS_PER_DOCUMENT through a real server: new users past it refused, nothing written, listed users still update and leave.
import t from 'tap';
import { DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT } from '../../src/limits.js';
import { env } from './comments-env.js';

const scope = { organizationId: 'org-pl', documentId: 'doc-pl' };
const users = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ userId: `u${from + i}` }));

t.test('a document lists at most MAX_PRESENCE_USERS_PER_DOCUMENT users; an add past it is refused and writes nothing', async (t) => {
  const { call, server } = await env(t);
  const limit = DEFAULT_MAX_PRESENCE_USERS_PER_DOCUMENT;
  t.equal((await call('/v2/presence/add', { ...scope, users: users(0, limit) })).status, 200, 'up to the limit, in one call');

  const past = await call('/v2/presence/add', { ...scope, users: [{ userId: 'u0', status: 'away' }, { userId: 'newcomer' }] });
  t.equal(past.status, 400);
  t.equal(past.error?.status, 'FAILED_PRECONDITION');
  t.match(past.error?.message, /MAX_PRESENCE_USERS_PER_DOCUMENT/, 'the message names the limit');
  t.match(past.error?.message, new RegExp(`would list ${limit + 1} users, past the limit of ${limit}`));
  const viaUpdate = await call('/v2/presence/update', { ...scope, users: [{ userId: 'newcomer' }] });
  t.equal(viaUpdate.error?.status, 'FAILED_PRECONDITION', 'update adds users too, and is refused the same way');

  const listed = await call<Array<{ userId: string; status: string }>>('/v2/presence/get', scope);
  t.equal(listed.data.length, limit, 'presence/get answers the users up to the limit');
  t.notOk(listed.data.some((u) => u.userId === 'newcomer'), 'the refused user was not written');
  t.equal(listed.data.find((u) => u.userId === 'u0')?.status, 'online', 'nothing of a refused request was written');

  t.equal((await call('/v2/presence/update', { ...scope, users: [{ userId: 'u0', status: 'away' }, { userId: 'u1', name: 'Ann' }] })).status, 200, 'listed users still update at the limit');
  t.equal((await call('/v2/presence/delete', { ...scope, userIds: ['u2'] })).status, 200, 'and leave');
  t.equal((await call('/v2/presence/add', { ...scope, users: [{ userId: 'newcomer' }] })).status, 200, 'a place freed takes a new user');

  t.equal((await call('/v2/presence/update', { ...scope, users: [{ userId: 'u3', status: 'offline' }] })).status, 200);
  t.equal((await call('/v2/presence/add', { ...scope, users: [{ userId: 'late' }] })).status, 200, 'a new user takes the place of a user gone offline');
  const after = await call<Array<{ userId: string }>>('/v2/presence/get', { ...scope, userIds: ['u3', 'late'] });
  t.same(after.data.map((u) => u.userId), ['late'], 'the offline user left the list early');
  t.equal((await call('/v2/presence/add', { ...scope, users: [{ userId: 'one-too-many' }] })).status, 400, 'with no one offline, refused again');

  t.equal((await call('/v2/presence/add', { ...scope, documentId: 'another', users: [{ userId: 'newcomer' }] })).status, 200, 'the limit is per document');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.match(metrics, /plait_limit_refusals_total\{limit="presence_users"\} 3\n/, 'the refusals are counted');
});

t.test('MAX_PRESENCE_USERS_PER_DOCUMENT is a setting', async (t) => {
  const { call } = await env(t, { maxPresenceUsersPerDocument: 3 });
  t.equal((await call('/v2/presence/add', { ...scope, users: users(0, 3) })).status, 200);
  const past = await call('/v2/presence/add', { ...scope, users: users(3, 1) });
  t.match(past.error?.message, /past the limit of 3 users a document/);
});
