// Owns a bare cluster state node for tests: a NATS connection, a ClusterState and the Store it replicates, opened and attached.
import { connect, type NatsConnection } from 'nats';
import { ClusterState, type ClusterStateOptions } from '../../src/cluster/state.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';

export interface StateNode {
  readonly nc: NatsConnection;
  readonly store: Store;
  readonly state: ClusterState;
  /** Closes the state (marking the cache clean when it can), the store and the connection, in that order. */
  stop(): Promise<void>;
}

/** Opens `dataDir` as node `nodeId` of the cluster at `url`, caught up with the state stream. */
export async function openStateNode(url: string, nodeId: string, dataDir: string, options: Partial<Omit<ClusterStateOptions, 'nodeId'>> = {}): Promise<StateNode> {
  const nc = await connect({ servers: url });
  const state = await ClusterState.open(nc, { log: createLogger('silent'), ...options, nodeId });
  const store = Store.open(dataDir, { replication: state });
  await state.attach(store);
  return {
    nc,
    store,
    state,
    async stop() {
      await state.close();
      await store.close();
      await nc.close();
    },
  };
}
