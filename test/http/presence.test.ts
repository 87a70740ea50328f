// Tests the presence operations over real HTTP (through the typed client), including bad input for each required field.
import t from 'tap';
import { env } from './comments-env.js';

const scope = { organizationId: 'org-p', documentId: 'doc-p' };

t.test('presence add, update, get and delete', async (t) => {
  const { server, creds } = await env(t);
  const client = server.api.client(creds);
  const added = await client.presenceAdd({ ...scope, users: [{ userId: 'u1', name: 'Ann', email: 'ann@example.com' }, { userId: 'u2', status: 'away' }] });
  t.same(added.data, { success: true });
  t.equal(added.message, 'Presence added successfully.');
  const updated = await client.presenceUpdate({ ...scope, users: [{ userId: 'u1', status: 'away' }, { userId: 'u3', name: 'Cy' }] });
  t.same(updated.data, { success: true });
  const all = await client.presenceGet<Array<Record<string, unknown>>>({ ...scope });
  t.match(all.data, [
    { userId: 'u1', name: 'Ann', email: 'ann@example.com', status: 'away', source: 'rest', connections: 0 },
    { userId: 'u2', status: 'away' },
    { userId: 'u3', name: 'Cy', status: 'online' },
  ]);
  t.type(all.data[0]?.['lastUpdated'], 'number');
  const away = await client.presenceGet<Array<{ userId: string }>>({ ...scope, statuses: ['away'] });
  t.same(away.data.map((u) => u.userId), ['u1', 'u2']);
  const deleted = await client.presenceDelete({ ...scope, userIds: ['u2', 'nobody'] });
  t.same(deleted.data, { success: true });
  const left = await client.presenceGet<Array<{ userId: string }>>({ ...scope, userIds: ['u1', 'u2'] });
  t.same(left.data.map((u) => u.userId), ['u1']);
  const other = await client.presenceGet({ ...scope, documentId: 'another' });
  t.same(other.data, [], 'presence is per document');
});

t.test('presence set over REST survives a restart', async (t) => {
  const first = await env(t);
  await first.server.api.client(first.creds).presenceUpdate({ ...scope, users: [{ userId: 'u1', status: 'busy' }] });
  const restarted = await first.server.restart();
  const res = await restarted.api.client(first.creds).presenceGet<Array<{ userId: string; status: string }>>(scope);
  t.match(res.data, [{ userId: 'u1', status: 'busy' }]);
});

t.test('a refused presence call rejects with PlaitError carrying the canonical status', async (t) => {
  const { server, creds } = await env(t);
  const wrongToken = server.api.client({ ...creds, authToken: 'not-the-token' });
  await t.rejects(wrongToken.presenceGet(scope), { name: 'PlaitError', status: 'PERMISSION_DENIED', httpStatus: 403 });
  // The schema says users has at least one item; the client's types do not stop a caller, the server does.
  await t.rejects(server.api.client(creds).presenceUpdate({ ...scope, users: [] }), {
    name: 'PlaitError',
    status: 'INVALID_ARGUMENT',
    httpStatus: 400,
    message: /data\.users must have at least 1/,
  });
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
