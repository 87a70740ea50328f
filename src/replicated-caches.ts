// Owns which in-memory caches a cluster node drops when the applier brings other nodes' writes into its store.
import type { UserTokens } from './auth/user-tokens.js';
import type { Logger } from './log.js';
import type { Store } from './store/env.js';
import { DB } from './store/keys.js';
import type { DeliveryConfigStore } from './tenant/delivery-config-store.js';
import type { Domains } from './tenant/domains.js';
import type { OwnerEmails } from './tenant/owner-email.js';
import type { PermissionProvider } from './tenant/permission-provider.js';
import type { Workspaces } from './tenant/workspaces.js';

/** Cluster mode: in-memory caches that other nodes' writes make stale are dropped when the applier changes their databases. */
export function invalidateOnReplicatedChange(
  store: Store,
  caches: { workspaces: Workspaces; userTokens: UserTokens; domains: Domains; permissionProvider: PermissionProvider; ownerEmails: OwnerEmails; deliveryConfigs: DeliveryConfigStore },
  log: Logger,
): void {
  store.onReplicatedChange((changed) => {
    if (changed.has(DB.apiKeys) || changed.has(DB.authTokenIndex) || changed.has(DB.workspaces)) caches.workspaces.forgetCached();
    if (changed.has(DB.workspaces) || changed.has(DB.ownerEmail)) caches.ownerEmails.reload(caches.workspaces);
    if (changed.has(DB.domains)) caches.domains.forgetAll();
    if (changed.has(DB.permissionProvider)) caches.permissionProvider.forgetAll();
    // Which events are written to the outbox follows the delivery configs (src/delivery/audience.ts).
    if (changed.has(DB.deliveryConfigs)) caches.deliveryConfigs.changed();
    if (changed.has(DB.signingKeys)) caches.userTokens.reload().catch((error: unknown) => log.error('reloading the signing keys failed', { error }));
  });
}
