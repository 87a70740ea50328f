// Test helper for multi-process cluster tests: each node's environment, the worker-role log line, waiting on committed state and on a resync.
import { join } from 'node:path';
import type { Client } from './sync.js';
import type { ServerProcess } from './process.js';

/** The environment of one node of a test cluster: one NATS, its own NODE_ID and DATA_DIR (under `dataDir`), quiet dev bootstrap. */
export function nodeEnv(dataDir: string, natsUrl: string, nodeId: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    // Each node its own DATA_DIR: in cluster mode LMDB is the node's cache of the state stream (docs/cluster.md).
    DATA_DIR: join(dataDir, nodeId),
    NATS_URL: natsUrl,
    SECRET_KEY: 'c'.repeat(64),
    NODE_ID: nodeId,
    CLUSTER_LEASE_MS: '2000',
    DEV_BOOTSTRAP: 'false',
    LOG_LEVEL: 'info',
    OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8',
    ...extra,
  };
}

/** Whether the node's last word on the worker role (src/cluster/worker-lease.ts) is that it took it. */
export function holdsWorker(node: ServerProcess): boolean {
  const log = node.stdout();
  const taken = log.lastIndexOf('worker role taken');
  return taken >= 0 && taken > log.lastIndexOf('worker role given up');
}

/** Polls a read until `ready` holds: the servers' committed state, not a timer, decides when the test goes on. */
export async function until<T>(read: () => Promise<T>, ready: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (ready(value)) return value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Resolves at the client's next completed sync (after a reconnect). */
export function resynced(client: Client): Promise<void> {
  return new Promise((resolve) => {
    const onSync = (state: boolean): void => {
      if (!state) return;
      client.provider.off('sync', onSync);
      resolve();
    };
    client.provider.on('sync', onSync);
  });
}
