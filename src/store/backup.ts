// Owns the hot backup of the LMDB environment: LMDB's own consistent copy (mdb_env_copy2) of a data directory in use.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { open, type DatabaseOptions } from 'lmdb';
import { ENVIRONMENT_FOLDER, StoreError } from './env.js';
import { MSGPACK_OPTIONS } from './record-codec.js';
import { DB } from './keys.js';
import { CLUSTER_CACHE_KEY } from './replication.js';
import { readStamp } from './schema.js';

/** LMDB's data file in that folder; the lock file beside it is not copied (LMDB makes it again at need). */
const DATA_FILE = 'data.mdb';

export interface EnvironmentCopy {
  /** The schema stamp the copy holds (undefined: the directory was never opened by a server). */
  readonly schemaVersion: number | undefined;
  /** The directory is a cluster node's cache of the stream (docs/cluster.md): a copy is that node's view, see docs/durability.md. */
  readonly clusterCache: boolean;
  /** Bytes of the copied data file. */
  readonly bytes: number;
}

/**
 * Copies the LMDB environment of `dataDir` into `target` (a new or empty directory), while a server may be writing to
 * it: LMDB copies one read transaction's snapshot, so the copy holds every write committed (and so answered) before it
 * began and nothing of a write committed later. `compact` leaves out free pages (slower, smaller). The environment is
 * opened read-only: nothing in `dataDir` changes, not even a cluster cache's marker (which Store.open would set).
 * A second process, not the server's: lmdb-js shares one environment per path within a process.
 */
export async function copyEnvironment(dataDir: string, target: string, options: { readonly compact: boolean }): Promise<EnvironmentCopy> {
  const source = join(dataDir, ENVIRONMENT_FOLDER);
  if (!existsSync(join(source, DATA_FILE))) throw new StoreError(`no Plait data in ${dataDir} (DATA_DIR): ${join(source, DATA_FILE)} does not exist`);
  if (resolve(target) === resolve(dataDir)) throw new StoreError(`backup target ${target} is the data directory itself; give a new or empty directory`);
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) throw new StoreError(`backup target ${target} is a file; give a new or empty directory`);
    if (readdirSync(target).length > 0) throw new StoreError(`backup target ${target} is not empty; give a new or empty directory`);
  }
  const into = join(target, ENVIRONMENT_FOLDER);
  mkdirSync(into, { recursive: true });
  const root = open({ path: source, maxDbs: 64, readOnly: true });
  try {
    const metaOptions: DatabaseOptions & typeof MSGPACK_OPTIONS & { name: string } = { name: DB.meta, encoding: 'msgpack', ...MSGPACK_OPTIONS };
    const meta = root.openDB<unknown, string>(metaOptions);
    const schemaVersion = readStamp(meta);
    const clusterCache = meta.get(CLUSTER_CACHE_KEY) !== undefined;
    await root.backup(into, options.compact);
    return { schemaVersion, clusterCache, bytes: statSync(join(into, DATA_FILE)).size };
  } finally {
    await root.close();
  }
}
