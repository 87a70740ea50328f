// Tests the permission provider's answer cache across workspaces: one workspace's flood of answers leaves another's cached, counted on real HTTP providers.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import type { Credentials } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { CACHE_ENTRIES, CACHE_ENTRIES_PER_KEY, type PermissionProvider } from '../../src/tenant/permission-provider.js';

const organizationId = 'org-cache';
const documentId = 'doc-cache';

/** A workspace's provider on loopback: allows everyone for a minute, signed as its backend would sign; counts who it was asked about. */
async function provider(t: Test, sign: (permissions: unknown[]) => string): Promise<{ url: string; asked: string[] }> {
  const asked: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as { userId: string; resources: Array<{ resourceId: string }> };
      asked.push(body.userId);
      const permissions = [{ userId: body.userId, resourceId: body.resources[0]?.resourceId ?? '', type: 'document', hasAccess: true, expiresAt: Date.now() + 60_000 }];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ permissions, signature: sign(permissions) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/permissions`, asked };
}

t.test("one workspace's flood of answers leaves another workspace's cached answers in place", async (t) => {
  const { api, server } = await startTestServer(t, { outboundAllowedNetworks: ['127.0.0.0/8'] });
  const permissions: PermissionProvider = server.services.permissionProvider;
  const workspace = async (): Promise<{ credentials: Credentials; asked: string[]; ask: (userId: string) => Promise<string | null> }> => {
    const credentials = await api.createWorkspace();
    await api.call(credentials, '/v2/workspace/apikeyconfig/update', { defaultDocumentAccessType: 'restricted' });
    const own = await provider(t, (signed) => permissions.sign(credentials.apiKey, signed as never));
    const updated = await api.call(credentials, '/v2/workspace/permissionproviderconfig/update', { usePermissionProvider: true, permissionProviderConfig: { permissionProviderUrl: own.url } });
    t.equal(updated.status, 200);
    const document = { apiKey: credentials.apiKey, organizationId, documentId };
    return { credentials, asked: own.asked, ask: async (userId) => (await permissions.documentAccess(userId, document)).role };
  };
  const victim = await workspace();
  const attacker = await workspace();

  const victims = Array.from({ length: 50 }, (_, i) => `victim-${i}`);
  const roles = async (): Promise<Array<string | null>> => {
    const answers: Array<string | null> = [];
    for (const userId of victims) answers.push(await victim.ask(userId));
    return answers;
  };
  t.ok((await roles()).every((role) => role === 'editor'), 'the victim users are allowed');
  t.equal(victim.asked.length, victims.length, 'each victim user was asked once');

  // More (user, document) pairs than the whole cache holds, 100 questions in flight.
  const flood = CACHE_ENTRIES + 500;
  for (let start = 0; start < flood; start += 100) {
    await Promise.all(Array.from({ length: Math.min(100, flood - start) }, (_, i) => attacker.ask(`flood-${start + i}`)));
  }
  t.equal(attacker.asked.length, flood, 'every flood pair reached its own provider');

  t.ok((await roles()).every((role) => role === 'editor'), 'the victim users are still allowed');
  t.equal(victim.asked.length, victims.length, "the victim's answers were still cached: its provider was not asked again");
  t.equal(permissions.cachedAnswers(attacker.credentials.apiKey), CACHE_ENTRIES_PER_KEY, 'the flooding key holds its share, no more');

  // The flooding key lost its own oldest answers and kept its newest.
  await attacker.ask(`flood-${flood - 1}`);
  t.equal(attacker.asked.length, flood, 'its newest answer is cached');
  await attacker.ask('flood-0');
  t.equal(attacker.asked.length, flood + 1, 'its oldest answer went');
});
