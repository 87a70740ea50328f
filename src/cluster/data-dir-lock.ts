// Owns the cluster-mode lock on a data directory: one node per DATA_DIR, since each node's LMDB is its own cache.
import { openSync, closeSync, readFileSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const LOCK_FILE = 'cluster.lock';
/** Held in this process (nodes started in one process, as tests do, have one pid). */
const heldHere = new Set<string>();

/**
 * A lock file holding the pid of the process that holds it. A lock whose process is gone (kill -9) is taken over;
 * one held by a live process (or by another node in this process) refuses the start.
 */
export class DataDirLock {
  private constructor(private readonly file: string) {}

  static take(dataDir: string): DataDirLock {
    const file = join(dataDir, LOCK_FILE);
    if (heldHere.has(file)) throw new Error(`DATA_DIR ${dataDir} is used by another node in this process; in cluster mode every node needs its own DATA_DIR`);
    for (let attempt = 0; attempt < 2; attempt++) {
      let fd: number;
      try {
        fd = openSync(file, 'wx');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const holder = Number.parseInt(readFileSync(file, 'utf8'), 10);
        if (Number.isInteger(holder) && holder !== process.pid && alive(holder)) {
          throw new Error(`DATA_DIR ${dataDir} is used by another node (pid ${holder}); in cluster mode every node needs its own DATA_DIR`);
        }
        // A stale lock (its process is gone): remove it and try once more.
        unlinkSync(file);
        continue;
      }
      writeSync(fd, String(process.pid));
      closeSync(fd);
      heldHere.add(file);
      return new DataDirLock(file);
    }
    throw new Error(`could not take the lock ${file}`);
  }

  release(): void {
    if (!heldHere.delete(this.file)) return;
    // force: the directory may be gone already (a test's temporary directory removed first).
    rmSync(this.file, { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
