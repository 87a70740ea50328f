// Owns the fencing of document writes in the state stream: each document's epoch (the stream sequence of its owner's claim) and which writes it outdates.
import type { Database, Key } from 'lmdb';
import { DB, type DbName } from '../store/keys.js';
import type { ReplicatedOp } from '../store/replication.js';

/** Databases whose keys start [apiKey, organizationId, documentId]: a document's rows, written only by its owner. */
const DOCUMENT_DBS: ReadonlySet<DbName> = new Set<DbName>([DB.docUpdates, DB.docSnapshots, DB.editorDocMeta, DB.annotations, DB.presence, DB.liveState, DB.recordings]);

/** DB.meta key prefix (node-local) of the newest claim applied per document: `fence:<document key string>` -> stream sequence. */
const META_PREFIX = 'fence:';

/** A message's fence: document key string -> the epoch its writer held for it when the write committed. */
export type Fence = Readonly<Record<string, number>>;

/** The document an op writes a row of (the document key string, as the leases name it), or undefined for other rows. */
export function documentOf(op: ReplicatedOp): string | undefined {
  if (!DOCUMENT_DBS.has(op[0])) return undefined;
  const key = op[1];
  if (!Array.isArray(key) || key.length < 3) return undefined;
  return JSON.stringify([key[0], key[1], key[2]]);
}

/**
 * The writer's side: the epoch of every document this node owns (or owned and lost without releasing it: the updates a
 * dropped actor still appends carry the old epoch, so they lose to the new owner's). Set when a claim is acknowledged,
 * removed on a release (after the final snapshot, so nothing of the document is written after it here).
 */
export class DocumentEpochs {
  private readonly held = new Map<string, number>();
  /** The lease revision each epoch was claimed under: a claim of the same holding of the lease keeps its epoch. */
  private readonly revisions = new Map<string, number>();

  hold(document: string, epoch: number, revision: number): void {
    this.held.set(document, epoch);
    this.revisions.set(document, revision);
  }

  forget(document: string): void {
    this.held.delete(document);
    this.revisions.delete(document);
  }

  epochOf(document: string): number | undefined {
    return this.held.get(document);
  }

  revisionOf(document: string): number | undefined {
    return this.revisions.get(document);
  }

  /** The fence of a message of these ops: one entry per document this node holds an epoch for; undefined for none. */
  fenceOf(ops: readonly ReplicatedOp[]): Fence | undefined {
    if (this.held.size === 0) return undefined;
    let fence: Record<string, number> | undefined;
    for (const op of ops) {
      const document = documentOf(op);
      if (document === undefined) continue;
      const epoch = this.held.get(document);
      if (epoch === undefined) continue;
      fence ??= {};
      fence[document] = epoch;
    }
    return fence;
  }
}

/** The newest claim of a document: its stream sequence (the epoch) and the lease revision it was made under. */
export interface Claimed {
  readonly seq: number;
  readonly revision: number;
}

function isClaimed(value: unknown): value is Claimed {
  return typeof value === 'object' && value !== null && typeof (value as Claimed).seq === 'number' && typeof (value as Claimed).revision === 'number';
}

/** What the applier does with one fenced message's ops. */
export interface Sorted {
  /** The ops still in force. */
  readonly kept: readonly ReplicatedOp[];
  /** Documents whose writes in this message an applied later claim outdated (dropped from `kept`). */
  readonly outdated: readonly string[];
}

/**
 * The applier's side: the newest claim per document in stream order (every node reads the same stream, so every node
 * keeps and drops the same writes). Kept in DB.meta in the applier's own transactions, so a restart resumes with it.
 */
export class ClaimTable {
  private readonly newest = new Map<string, Claimed>();

  /** Loads the claims stored with the applied position. */
  load(meta: Database<unknown, Key>): void {
    this.newest.clear();
    for (const { key, value } of meta.getRange({ start: META_PREFIX, end: `${META_PREFIX}\uffff` })) {
      if (typeof key === 'string' && isClaimed(value)) this.newest.set(key.slice(META_PREFIX.length), value);
    }
  }

  /** Removes the stored claims (the cache is wiped and rebuilt from the stream's start). */
  static clear(meta: Database<unknown, Key>): void {
    for (const key of meta.getKeys({ start: META_PREFIX, end: `${META_PREFIX}\uffff` })) meta.removeSync(key);
  }

  /**
   * A claim applied at `seq` under lease revision `revision`: writes fenced with an older epoch no longer count.
   * Returns the DB.meta entry to store, or undefined for a claim of an older holding of the lease than the newest
   * applied (a claim that timed out and was resent after another node took the lease must not fence that node off).
   */
  claim(document: string, seq: number, revision: number): { key: string; value: Claimed } | undefined {
    const newest = this.newest.get(document);
    if (newest !== undefined && newest.revision >= revision) return undefined;
    const value = { seq, revision };
    this.newest.set(document, value);
    return { key: `${META_PREFIX}${document}`, value };
  }

  newestOf(document: string): number | undefined {
    return this.newest.get(document)?.seq;
  }

  /** Drops the ops of every document whose epoch in `fence` is older than its newest claim. */
  sort(ops: readonly ReplicatedOp[], fence: Fence | undefined): Sorted {
    if (fence === undefined) return { kept: ops, outdated: [] };
    const outdated = Object.keys(fence).filter((document) => (fence[document] ?? 0) < (this.newestOf(document) ?? 0));
    if (outdated.length === 0) return { kept: ops, outdated };
    const dropped = new Set(outdated);
    return { kept: ops.filter((op) => !dropped.has(documentOf(op) ?? '')), outdated };
  }
}
