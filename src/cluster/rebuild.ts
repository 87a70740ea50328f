// Owns the checks of a node's cache at start (data from outside cluster mode, a dirty cache, another stream) and rebuilding it from the newest checkpoint when it is behind the start of the state stream.
import type { JetStreamManager, ObjectStore } from 'nats';
import type { Logger } from '../log.js';
import type { Store } from '../store/env.js';
import { DB } from '../store/keys.js';
import { CLUSTER_CACHE_KEY } from '../store/replication.js';
import { CHECKPOINT_BLOBS_KEY, newestCheckpoint, readCheckpoint } from './checkpoint.js';
import { ClaimTable } from './fence.js';
import { GAPS_KEY } from './origin-order.js';
import { STATE_STREAM } from './state-message.js';

/** DB.meta `CLUSTER_CACHE_KEY`: the stream the cache follows, and whether it may hold writes the stream lacks. */
interface CacheState {
  /** The stream's creation time: a cache built from another stream (NATS store wiped) is rebuilt. */
  readonly stream: string;
  readonly dirty: boolean;
}

/**
 * Refuses a DATA_DIR holding data written outside cluster mode, and wipes a cache that may hold writes the cluster
 * never acknowledged (the node stopped without a clean close) or that follows another stream, with the applier's
 * position and fold state (claims, gaps), so it is rebuilt from the stream.
 */
export async function checkCache(store: Store, stream: string, positionKey: string, log: Logger): Promise<void> {
  const meta = store.records<unknown>(DB.meta);
  const cache = meta.get(CLUSTER_CACHE_KEY) as CacheState | undefined;
  if (cache === undefined) {
    if (!store.holdsReplicatedRows()) return;
    throw new Error(
      `DATA_DIR ${store.path} holds data written outside cluster mode; cluster mode keeps durable state in JetStream and needs an empty DATA_DIR (moving single-process data into a cluster is not built)`,
    );
  }
  if (!cache.dirty && cache.stream === stream) return;
  log.warn('the local cache may hold writes the cluster never acknowledged (the node stopped without a clean close) or belongs to another stream: wiping it and rebuilding from the stream', {
    dirty: cache.dirty,
    stream,
    cacheStream: cache.stream,
  });
  await store.wipeReplicated();
  meta.removeSync(positionKey);
  ClaimTable.clear(meta);
  meta.removeSync(GAPS_KEY);
}

/** Marks the cache dirty (from the start until a clean close) or clean (every local write is in the stream). */
export function markCache(store: Store, stream: string, dirty: boolean): void {
  // DB.meta is node-local (never recorded), and writes through the store are refused once closed.
  store.records<unknown>(DB.meta).putSync(CLUSTER_CACHE_KEY, { stream, dirty } satisfies CacheState);
}

/** DB.meta key written while a checkpoint loads (the position itself is written only once the checkpoint is whole). */
const LOADING_KEY = 'clusterLoadingCheckpoint';

export interface RebuildArgs {
  readonly jsm: JetStreamManager;
  readonly checkpoints: ObjectStore;
  /** The stream's creation time: a checkpoint of another stream is refused. */
  readonly stream: string;
  readonly log: Logger;
  readonly store: Store;
  /** The cache's applied position now. */
  readonly applied: number;
  /** DB.meta key of the applied position. */
  readonly positionKey: string;
  readonly attempts: number;
}

/**
 * Returns the cache's applied position: unchanged when it is at or past the stream's first sequence − 1 (nothing was
 * purged that it lacks); else the cache is emptied and loaded from the newest checkpoint, whose sequence is returned. A
 * checkpoint deleted (or cut short) under the read is retried with the newest one; no checkpoint covering the gap
 * refuses the start, since applying the stream with a gap would lose writes.
 */
export async function rebuildIfBehind(args: RebuildArgs): Promise<number> {
  const { store, log } = args;
  const meta = store.records<unknown>(DB.meta);
  for (let attempt = 1; ; attempt++) {
    const first = (await args.jsm.streams.info(STATE_STREAM)).state.first_seq;
    if (args.applied >= first - 1) return args.applied;
    const newest = await newestCheckpoint(args.checkpoints);
    if (newest === undefined || newest.seq < first - 1) {
      throw new Error(`the cluster log starts at sequence ${first} and no checkpoint covers what came before (newest: ${newest?.seq ?? 'none'}); this cache cannot be rebuilt`);
    }
    const started = performance.now();
    log.warn('the cache is behind the start of the cluster log (away across a compaction, or new): loading the newest checkpoint', { applied: args.applied, first, checkpoint: newest.seq });
    await store.wipeReplicated();
    meta.removeSync(args.positionKey);
    ClaimTable.clear(meta);
    meta.removeSync(GAPS_KEY);
    try {
      let fold: ReadonlyArray<readonly [string, unknown]> = [];
      const rows = await readCheckpoint(args.checkpoints, newest, args.stream, (batch) => store.applyReplicated(batch, { key: LOADING_KEY, value: newest.seq }), (entries) => (fold = entries));
      // The applier's fold state at the checkpoint (claims, gaps) goes in before the position that makes the load count.
      for (const [key, value] of fold) if (key !== CHECKPOINT_BLOBS_KEY) meta.putSync(key, value);
      meta.putSync(args.positionKey, newest.seq);
      log.info('checkpoint loaded', { seq: newest.seq, rows, ms: Math.round(performance.now() - started) });
      return newest.seq;
    } catch (error) {
      // Deleted under the read by a newer compaction (or cut short): the next try takes the newest one.
      if (attempt >= args.attempts) throw error;
      log.warn('could not load the checkpoint; trying the newest again', { checkpoint: newest.name, error: String(error) });
    }
  }
}
