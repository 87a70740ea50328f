// Owns the fencing of document writes in the state stream: each document's epoch (the stream sequence of its owner's claim) and which writes it outdates.
import type { Database, Key } from 'lmdb';
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import { DB, type DbName } from '../store/keys.js';
import { documentOfThreadTime } from '../store/thread-times.js';
import type { ReplicatedOp } from '../store/replication.js';

/** Databases whose keys start [apiKey, organizationId, documentId]: a document's rows, written only by its owner. */
const DOCUMENT_DBS: ReadonlySet<DbName> = new Set<DbName>([DB.docUpdates, DB.docSnapshots, DB.editorDocMeta, DB.annotations, DB.presence, DB.liveState, DB.recordings]);

/** DB.meta key prefix (node-local) of the newest claim applied per document: `fence:<document key string>` -> stream sequence. */
const META_PREFIX = 'fence:';

/** A message's fence: document key string -> the epoch its writer held for it when the write committed. */
export type Fence = Readonly<Record<string, number>>;

/** The document an op writes a row of (the document key string, as the leases name it), or undefined for other rows. */
export function documentOf(op: ReplicatedOp): string | undefined {
  if (op[0] === DB.annotationTimes || op[0] === DB.annotationIds) {
    // A thread's index rows are keyed by time and by id, but belong to the thread's document: fenced with the thread.
    const document = documentOfThreadTime(op[1]);
    return document === undefined ? undefined : JSON.stringify(document);
  }
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

  /** The stored claims as DB.meta entries (a checkpoint carries them: src/cluster/checkpoint.ts). */
  static stored(meta: Database<unknown, Key>): Array<[string, unknown]> {
    const entries: Array<[string, unknown]> = [];
    for (const { key, value } of meta.getRange({ start: META_PREFIX, end: `${META_PREFIX}\uffff` })) if (typeof key === 'string') entries.push([key, value]);
    return entries;
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

/**
 * Everything the state stream does for fencing, behind a few calls from src/cluster/state.ts: the fence of an outgoing
 * message, the claims and fenced writes the applier meets, and the documents this node's cache got wrong.
 */
export class Fencing {
  readonly epochs = new DocumentEpochs();
  readonly claims = new ClaimTable();
  /** Documents whose own writes were fenced off after this node's cache took them: the cache is wrong for them. */
  private readonly diverged = new Set<string>();
  /** Counters of this boot's claim messages not yet seen by the applier (a second copy of one is ignored). */
  private readonly ownClaims = new Set<number>();

  constructor(
    private readonly log: Pick<Logger, 'warn' | 'error'>,
    /** Whether this node's lease of a document is still valid (src/cluster/leases.ts `owns`); absent: always. */
    private readonly owns?: (document: string) => boolean,
  ) {}

  get divergedCount(): number {
    return this.diverged.size;
  }

  /** Why this node must not take `document` now (its cache of it is wrong until rebuilt), or undefined. */
  refusal(document: string): Error | undefined {
    if (!this.diverged.has(document)) return undefined;
    return unavailable("this node's cache of the document holds writes fenced off by a newer owner (it is rebuilt at the next start); retry shortly");
  }

  /** Whether a claim under `revision` is the holding this node already has an epoch for (no new claim needed). */
  holding(document: string, revision: number): boolean {
    return this.epochs.revisionOf(document) === revision;
  }

  /** This node is about to publish claim message `n`. */
  claiming(n: number): void {
    this.ownClaims.add(n);
  }

  /** A claim on the stream: returns the DB.meta entry to store with the position, or undefined when it changes nothing. */
  claimLanded(document: string, revision: number, seq: number, own: { readonly n: number } | undefined, admitted: boolean): { key: string; value: Claimed } | undefined {
    // A second copy (resent past the duplicate window) must not start a new epoch over its owner's writes.
    const first = own === undefined ? admitted : this.ownClaims.delete(own.n);
    return first ? this.claims.claim(document, seq, revision) : undefined;
  }

  /** A foreign message's ops: those of documents whose fence an applied claim outdated are dropped. */
  foreign(ops: readonly ReplicatedOp[], fence: Fence | undefined, origin: string, seq: number): readonly ReplicatedOp[] {
    const { kept, outdated } = this.claims.sort(ops, fence);
    if (outdated.length > 0) this.log.warn('dropped document writes of an owner whose lease had moved (fenced)', { origin, seq, documents: outdated });
    return kept;
  }

  /** A foreign op of a document whose newer epoch this node's own pending writes of it (an older epoch) lose to. */
  winsOverOwn(op: ReplicatedOp, fence: Fence | undefined): boolean {
    if (fence === undefined) return false;
    const document = documentOf(op);
    if (document === undefined) return false;
    const theirs = fence[document];
    const ours = this.epochs.epochOf(document);
    return theirs !== undefined && ours !== undefined && ours < theirs;
  }

  /** An own message the stream placed after a newer owner's claim: the other nodes dropped it, this cache has it. */
  ownLanded(fence: Fence | undefined, seq: number): void {
    for (const document of this.claims.sort([], fence).outdated) {
      this.diverged.add(document);
      this.log.error("this node's writes of a document were fenced off by a newer owner; its cache of the document is wrong until it is rebuilt at the next start", { document, seq });
    }
  }

  /** A fenced write acknowledged after its lease's validity: a newer owner may have claimed before it landed. */
  acknowledgedLate(fence: Fence | undefined): Error | undefined {
    const owns = this.owns;
    if (fence === undefined || owns === undefined) return undefined;
    if (Object.keys(fence).every((document) => owns(document))) return undefined;
    return unavailable("the write reached the cluster log after this node's lease of the document ended; it was not acknowledged, retry");
  }
}
