// Owns the floor's durable log variant: each room's updates appended to Plait's own UpdateLog (group commit, compaction) in LMDB.
import * as Y from 'yjs';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { UpdateLog, type LogStream } from '../../src/store/update-log.js';
import type { StoreMeta } from '../../src/store/snapshots.js';

/**
 * Plait's defaults, read from its config table (GROUP_COMMIT_MS, COMPACT_AFTER_UPDATES, COMPACT_AFTER_BYTES; an empty
 * environment, so the host's own variables do not change them), so the floor pays for durability exactly what Plait
 * pays: the question it answers is how much of Plait's gap to the floor is the log.
 */
const { groupCommitMs, compactAfterUpdates, compactAfterBytes } = loadConfig({}, []);
const OPTIONS = { groupCommitMs, compactAfterUpdates, compactAfterBytes } as const;

/** One room's place in the log: the LogStream Plait's EditorDoc is, reduced to what the log reads. */
class RoomStream implements LogStream {
  nextSeq = 0;
  logCount = 0;
  logBytes = 0;
  snapshotBytes = 0;
  needsSnapshot = false;
  lastUpdate = 0;
  /** Entries below this sequence number are in the snapshot: moved by `snapshot`, which the log calls when it folds. */
  private foldedSeq = 0;

  constructor(readonly id: readonly [string, string, string, string], private readonly doc: Y.Doc) {}

  meta(): StoreMeta {
    return { type: null, contentKey: '', lastUpdate: this.lastUpdate, lastUpdatedBy: '', sessionId: null, foldedSeq: this.foldedSeq };
  }

  snapshot(): Uint8Array {
    this.foldedSeq = this.nextSeq;
    return Y.encodeStateAsUpdate(this.doc);
  }
}

/** The log of every room of a floor host; `append` is called once per update applied. */
export class FloorLog {
  private readonly store: Store;
  private readonly log: UpdateLog;
  private readonly streams = new Map<string, RoomStream>();

  constructor(dataDir: string) {
    this.store = Store.open(dataDir);
    this.log = new UpdateLog(this.store, OPTIONS, createLogger('warn'));
  }

  append(room: string, doc: Y.Doc, update: Uint8Array): void {
    let stream = this.streams.get(room);
    if (stream === undefined) this.streams.set(room, (stream = new RoomStream(['floor', 'floor', room, 'default'], doc)));
    stream.lastUpdate = Date.now();
    // Peers do not wait for the commit (as in Plait); the UpdateLog logs a failed commit on this promise itself.
    void this.log.append(stream, update);
  }

  /**
   * A room's last member left: resolves once its appends have committed, after which its doc may be destroyed (a
   * compaction due in that commit encodes the doc). A room opened again gets a new stream for its new doc.
   */
  forget(room: string): Promise<void> {
    this.streams.delete(room);
    return this.log.flush();
  }

  /** Resolves once every append so far has committed (the host's `settle`). */
  async flush(): Promise<void> {
    await this.log.flush();
  }

  async close(): Promise<void> {
    await this.log.flush();
    await this.store.close();
  }
}
