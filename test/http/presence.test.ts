// Tests the presence operations over real HTTP, including bad input for each required field.
import t from 'tap';
import { env } from './comments-env.js';

const scope = { organizationId: 'org-p', documentId: 'doc-p' };

t.test('presence add, update, get and delete', async (t) => {
  const { call } = await env(t);
  const added = await call('/v2/presence/add', { ...scope, users: [{ userId: 'u1', name: 'Ann', email: 'ann@example.com' }, { userId: 'u2', status: 'away' }] });
  t.same(added.data, { success: true });
  const updated = await call('/v2/presence/update', { ...scope, users: [{ userId: 'u1', status: 'away' }, { userId: 'u3', name: 'Cy' }] });
  t.same(updated.data, { success: true });
  const all = await call<Array<Record<string, unknown>>>('/v2/presence/get', { ...scope });
  t.match(all.data, [
    { userId: 'u1', name: 'Ann', email: 'ann@example.com', status: 'away', source: 'rest', connections: 0 },
    { userId: 'u2', status: 'away' },
    { userId: 'u3', name: 'Cy', status: 'online' },
  ]);
  t.type(all.data[0]?.['lastUpdated'], 'number');
  const away = await call<Array<{ userId: string }>>('/v2/presence/get', { ...scope, statuses: ['away'] });
  t.same(away.data.map((u) => u.userId), ['u1', 'u2']);
  const deleted = await call('/v2/presence/delete', { ...scope, userIds: ['u2', 'nobody'] });
  t.same(deleted.data, { success: true });
  const left = await call<Array<{ userId: string }>>('/v2/presence/get', { ...scope, userIds: ['u1', 'u2'] });
  t.same(left.data.map((u) => u.userId), ['u1']);
  const other = await call('/v2/presence/get', { ...scope, documentId: 'another' });
  t.same(other.data, [], 'presence is per document');
});

t.test('presence set over REST survives a restart', async (t) => {
  const first = await env(t);
  await first.call('/v2/presence/update', { ...scope, users: [{ userId: 'u1', status: 'busy' }] });
  const restarted = await first.server.restart();
  const res = await restarted.api.call<Array<{ userId: string; status: string }>>(first.creds, '/v2/presence/get', scope);
  t.match(res.body.result?.data, [{ userId: 'u1', status: 'busy' }]);
});

t.test('bad input for each required field is INVALID_ARGUMENT naming the field', async (t) => {
  const { call } = await env(t);
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['/v2/presence/update', { documentId: 'd', users: [{ userId: 'u' }] }, /data\.organizationId is required/],
    ['/v2/presence/update', { organizationId: 'o', users: [{ userId: 'u' }] }, /data\.documentId is required/],
    ['/v2/presence/update', { ...scope }, /data\.users is required/],
    ['/v2/presence/update', { ...scope, users: [] }, /data\.users must have at least 1/],
    ['/v2/presence/update', { ...scope, users: [{ name: 'x' }] }, /data\.users\[0\]\.userId is required/],
    ['/v2/presence/update', { ...scope, users: [{ userId: 'u', status: 3 }] }, /data\.users\[0\]\.status must be a string/],
    ['/v2/presence/add', { organizationId: 'o', users: [{ userId: 'u' }] }, /data\.documentId is required/],
    ['/v2/presence/add', { ...scope, users: [{}] }, /data\.users\[0\]\.userId is required/],
    ['/v2/presence/delete', { ...scope }, /data\.userIds is required/],
    ['/v2/presence/delete', { documentId: 'd', userIds: ['u'] }, /data\.organizationId is required/],
    ['/v2/presence/get', { organizationId: 'o' }, /data\.documentId is required/],
    ['/v2/presence/get', { documentId: 'd' }, /data\.organizationId is required/],
  ];
  for (const [path, data, message] of cases) {
    const res = await call(path, data);
    t.equal(res.status, 400, `${path} ${JSON.stringify(data)}`);
    t.equal(res.error?.status, 'INVALID_ARGUMENT');
    t.match(res.error?.message, message);
  }
});
