// Tests the permission provider against a real HTTP provider on loopback: allow, deny, timeout, unsigned and tampered answers, caching, SSRF.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import type { ApiClient, Credentials } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { roomName, syncBase, upgradeStatus, userToken, type Room } from '../helpers/sync.js';

const room: Room = { organizationId: 'org-pp', documentId: 'doc-pp', editorId: 'main' };

type Behaviour = 'allow' | 'viewer' | 'deny' | 'hang' | 'unsigned' | 'tampered' | 'error';

interface Asked {
  readonly body: { userId: string; organizationId: string; resources: Array<{ type: string; resourceId: string }> };
  readonly authorization: string | undefined;
}

/** A customer's permission provider on loopback; signs its answers through Plait's generate_signature, as a backend would. */
async function fakeProvider(t: Test, api: ApiClient, credentials: Credentials) {
  let behaviour: Behaviour = 'allow';
  const asked: Asked[] = [];
  const hanging: ServerResponse[] = [];
  const sign = async (permissions: unknown[]) => {
    const signed = await api.call<{ signature: string }>(credentials, '/v2/auth/generate_signature', { permissions });
    return signed.body.result?.data.signature ?? '';
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Asked['body'];
      asked.push({ body, authorization: req.headers.authorization });
      const resource = body.resources[0];
      const permission = { userId: body.userId, resourceId: resource?.resourceId ?? '', type: 'document', hasAccess: behaviour !== 'deny', expiresAt: Date.now() + 60_000, ...(behaviour === 'viewer' ? { accessRole: 'viewer' } : {}) };
      const answer = async (): Promise<void> => {
        if (behaviour === 'hang') return void hanging.push(res);
        if (behaviour === 'error') return void res.writeHead(500).end('boom');
        const signature = behaviour === 'unsigned' ? '' : await sign([behaviour === 'tampered' ? { ...permission, hasAccess: false } : permission]);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(behaviour === 'unsigned' ? { permissions: [permission] } : { permissions: [permission], signature }));
      };
      void answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const res of hanging) res.destroy();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/permissions`,
    asked,
    set: (next: Behaviour) => (behaviour = next),
  };
}

async function setup(t: Test, allowLoopback = true) {
  const { api, url, server } = await startTestServer(t, allowLoopback ? { outboundAllowedNetworks: ['127.0.0.0/8'] } : {});
  const credentials = await api.createWorkspace();
  // Restricted: stored grants decide nothing for a user without one, so the provider is asked.
  await api.call(credentials, '/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'restricted' });
  const provider = await fakeProvider(t, api, credentials);
  const updated = await api.call(credentials, '/v2/workspace/permissionproviderconfig/update', {
    usePermissionProvider: true,
    permissionProviderConfig: { permissionProviderUrl: provider.url, authToken: 'provider-secret-token' },
  });
  t.equal(updated.status, 200);
  const socketFor = async (userId: string) => `${syncBase(url)}/${roomName(room)}?token=${await userToken(api, credentials, [], userId)}`;
  return { api, credentials, provider, socketFor, services: server.services };
}

t.test('concurrent checks asking the same question share one request to the provider', async (t) => {
  // Checked where the sync upgrade asks (PermissionProvider.documentAccess), not through five upgrades: an upgrade
  // answered after real I/O prints uWS's cork warning (docs/protocol.md, Known issues).
  const { provider, credentials, services } = await setup(t);
  provider.set('allow');
  const document = { apiKey: credentials.apiKey, organizationId: room.organizationId, documentId: room.documentId };
  const answers = await Promise.all(Array.from({ length: 5 }, () => services.permissionProvider.documentAccess('carol', document)));
  t.ok(answers.every((access) => access.role === 'editor'), 'all five are allowed');
  t.equal(provider.asked.length, 1, 'one question reached the provider');
  await services.permissionProvider.documentAccess('dave', document);
  t.equal(provider.asked.length, 2, 'another question is asked on its own');
});

t.test('the provider decides what stored grants do not: allow opens, deny refuses; answers are cached until expiresAt', async (t) => {
  const { provider, socketFor } = await setup(t);
  provider.set('allow');
  const status = await upgradeStatus(await socketFor('alice')).catch((error: Error) => error.message);
  t.match(String(status), /succeeded/, 'allowed: the upgrade opens');
  t.equal(provider.asked.length, 1);
  t.same(provider.asked[0]?.body, { userId: 'alice', organizationId: room.organizationId, resources: [{ type: 'document', resourceId: room.documentId, organizationId: room.organizationId }] });
  t.equal(provider.asked[0]?.authorization, 'Bearer provider-secret-token', 'the configured token is sent');
  await upgradeStatus(await socketFor('alice')).catch(() => undefined);
  t.equal(provider.asked.length, 1, 'a cached answer is not asked again before its expiresAt');
  provider.set('deny');
  t.equal(await upgradeStatus(await socketFor('bob')), 403, 'denied');
});

t.test('a timeout, an error status, an unsigned or a tampered answer denies, never grants', async (t) => {
  const { provider, socketFor } = await setup(t);
  for (const behaviour of ['unsigned', 'tampered', 'error', 'hang'] as const) {
    provider.set(behaviour);
    t.equal(await upgradeStatus(await socketFor(`user-${behaviour}`)), 403, behaviour);
  }
});

t.test('without the allow-list a provider on loopback is refused by the outbound guard, which denies', async (t) => {
  const { provider, socketFor } = await setup(t, false);
  provider.set('allow');
  t.equal(await upgradeStatus(await socketFor('carol')), 403);
  t.equal(provider.asked.length, 0, 'the request never left');
});

t.test('config get/update and generate_signature', async (t) => {
  const { api, credentials } = await setup(t);
  const got = await api.call<{ usePermissionProvider: boolean; permissionProviderConfig: { permissionProviderUrl: string; authToken: string } }>(
    credentials,
    '/v2/workspace/permissionproviderconfig/get',
    {},
  );
  t.equal(got.body.result?.data.usePermissionProvider, true);
  t.match(got.body.result?.data.permissionProviderConfig.permissionProviderUrl, /^http:\/\/127\.0\.0\.1:\d+\/permissions$/);
  t.equal(got.body.result?.data.permissionProviderConfig.authToken, 'pro...ken', 'the token is shown masked');
  const bad = await api.call(credentials, '/v2/workspace/permissionproviderconfig/update', { permissionProviderConfig: { permissionProviderUrl: 'ftp://x' } });
  t.equal(bad.body.error?.status, 'INVALID_ARGUMENT');
  t.match(bad.body.error?.message, /Please enter a valid URL/);
  const off = await api.call(credentials, '/v2/workspace/permissionproviderconfig/update', { usePermissionProvider: false });
  t.equal(off.status, 200);
  const after = await api.call<{ usePermissionProvider: boolean; permissionProviderConfig: { authToken: string } }>(credentials, '/v2/workspace/permissionproviderconfig/get', {});
  t.equal(after.body.result?.data.usePermissionProvider, false);
  t.equal(after.body.result?.data.permissionProviderConfig.authToken, 'pro...ken', 'a partial update keeps the stored token');

  const permissions = [{ userId: 'u', resourceId: 'd', type: 'document', hasAccess: true }];
  const one = await api.call<{ signature: string }>(credentials, '/v2/auth/generate_signature', { permissions });
  const reordered = await api.call<{ signature: string }>(credentials, '/v2/auth/generate_signature', { permissions: [{ hasAccess: true, type: 'document', resourceId: 'd', userId: 'u' }] });
  t.equal(one.body.result?.data.signature, reordered.body.result?.data.signature, 'key order does not matter');
  const other = await api.createWorkspace();
  const foreign = await api.call<{ signature: string }>(other, '/v2/auth/generate_signature', { permissions });
  t.not(foreign.body.result?.data.signature, one.body.result?.data.signature, 'a signature is bound to its API key');
  const invalid = await api.call(credentials, '/v2/auth/generate_signature', { permissions: [{ userId: 'u' }] });
  t.match(invalid.body.error?.message, /resourceId|hasAccess|type/);
});
