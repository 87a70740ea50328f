// Owns the first-start dev workspace: created once on an empty data directory, its credentials printed once.
import type { Database, Key } from 'lmdb';
import type { Config } from './config.js';
import type { Store } from './store/env.js';
import { DB } from './store/keys.js';
import type { OwnerEmails } from './tenant/owner-email.js';
import type { Workspaces } from './tenant/workspaces.js';

export const DEV_OWNER_EMAIL = 'dev@plait.localhost';

/** Returns the banner to print, or undefined when bootstrap is off or already done on this data directory. */
export async function devBootstrap(
  config: Config,
  store: Store,
  workspaces: Workspaces,
  ownerEmails: Pick<OwnerEmails, 'exempt'>,
): Promise<string | undefined> {
  if (!config.devBootstrap) return undefined;
  const meta: Database<unknown, Key> = store.records<unknown>(DB.meta);
  if (meta.get('devBootstrapDone') === true || !workspaces.isEmpty()) return undefined;
  const workspace = await workspaces.create({ ownerEmail: DEV_OWNER_EMAIL, name: 'Dev', workspaceName: 'Dev workspace' });
  // No mail reaches the dev owner's address: its keys must not expire for want of verification.
  await ownerEmails.exempt(workspace.id);
  await store.transaction(() => {
    void meta.put('devBootstrapDone', true);
  });
  const apiKey = Object.keys(workspace.apiKeyList)[0];
  if (apiKey === undefined) return undefined;
  const identity = { kind: 'workspace', workspaceId: workspace.id } as const;
  const authToken = workspaces.authTokens(identity, apiKey)[0]?.token ?? '';
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  return [
    '',
    'Plait dev workspace created (shown once; later starts print nothing secret):',
    `  workspace id          ${workspace.id}`,
    `  workspace auth token  ${workspace.authToken}`,
    `  API key               ${apiKey}`,
    `  auth token            ${authToken}`,
    'Try it:',
    `  curl -s -X POST ${base}/v2/workspace/apikeyconfig/get -H 'content-type: application/json' ` +
      `-H 'x-svc-api-key: ${apiKey}' -H 'x-svc-auth-token: ${authToken}' -d '{"data":{}}'`,
    '',
  ].join('\n');
}
