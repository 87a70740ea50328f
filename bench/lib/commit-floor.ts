// Owns the commit floor of REST writes: the CPU of committing comment writes through Plait's own store, without HTTP.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Figure } from './report.js';

/**
 * The compiled build (bench/lib/launch.ts builds it before Plait first launches), as the server runs it; the URL is
 * computed so TypeScript checks the calls against the sources the build was made from.
 */
const dist = (path: string): string => new URL(`../../dist/src/${path}`, import.meta.url).href;

/** The delivery dispatcher's batch (src/delivery/dispatcher.ts). */
const DISPATCH_BATCH = 100;

export interface CommitFloorOptions {
  /** Changes per group-commit batch (about what 32 connections give: measured 20-30 in the comment run). */
  readonly batch: number;
  /** Measured batches per variant (after as many unmeasured ones). */
  readonly batches: number;
}

/**
 * What a committed comment costs below HTTP, in the bench process, on the real Store, group commit and Outbox:
 * - one put: one record per change through `Store.transactionGrouped` (`single`), as a presence status change;
 * - thread alone: the change Add Comment Annotations commits in a workspace with no delivery channel configured (its
 *   event is not written, docs/delivery.md "Which events are written"): the thread's row and its two index rows, with
 *   no child transaction of its own (GroupedChange.bounded);
 * - thread + event: the change Add Comment Annotations commits in a workspace with a channel the dispatcher plans for
 *   (a webhook): the thread (built and viewed as the server does), its index rows and its outbox event, bounded too
 *   (an outbox row is keyed by its seq: Outbox.raisesBounded);
 * - + dispatch: the same, and the events claimed and acked 100 at a time in one transaction, as the delivery
 *   dispatcher does under load with no channel configured (src/delivery/dispatcher.ts).
 * Server CPU is process.cpuUsage (user + system, every thread: lmdb-js commits on its own thread), per change.
 */
export async function commitFloor(options: CommitFloorOptions): Promise<Figure[]> {
  const { Store } = (await import(dist('store/env.js'))) as typeof import('../../src/store/env.js');
  const { Outbox } = (await import(dist('events/outbox.js'))) as typeof import('../../src/events/outbox.js');
  const { DB } = (await import(dist('store/keys.js'))) as typeof import('../../src/store/keys.js');
  const { buildAnnotation } = (await import(dist('doc/annotations/mutations.js'))) as typeof import('../../src/doc/annotations/mutations.js');
  const { annotationView } = (await import(dist('doc/annotations/model.js'))) as typeof import('../../src/doc/annotations/model.js');
  const { eventDraft } = (await import(dist('doc/annotations/events.js'))) as typeof import('../../src/doc/annotations/events.js');
  const { threadIndexes, writeThreadTime } = (await import(dist('doc/annotations/time-index.js'))) as typeof import('../../src/doc/annotations/time-index.js');
  type WriteTx = import('../../src/store/env.js').WriteTx;

  const dir = mkdtempSync(join(tmpdir(), 'plait-commit-floor-'));
  const store = Store.open(dir);
  const outbox = new Outbox(store);
  const threads = store.records<unknown>(DB.annotations);
  const indexes = threadIndexes(store);
  const ref = { apiKey: 'key_commit_floor', organizationId: 'org', documentId: 'doc' };
  const input = { commentData: [{ commentText: 'x', from: { userId: 'u1' } }] };
  let n = 0;

  const thread = (withEvent: boolean): { key: Array<string | number>; bounded: boolean; write: (tx: WriteTx) => void } => {
    const id = `t${++n}`;
    const built = buildAnnotation(input, id, n, Date.now());
    if (!built.ok) throw new Error(built.message);
    const record = built.value;
    const view = annotationView(ref, record);
    // Keyed by the annotation number, as src/doc/annotations/thread-changes.ts writes a thread.
    const key = [ref.apiKey, ref.organizationId, ref.documentId, record.annotationNumber];
    return {
      key,
      // As ThreadChanges.bounded: short ids, and an event whose only row is its outbox row.
      bounded: true,
      write: (tx) => {
        threads.putSync(key, record);
        writeThreadTime(indexes, ref, undefined, record);
        if (withEvent) outbox.append(tx, eventDraft(ref, view, { type: 'comment_annotation.add', actionUser: record.from, ...(record.comments[0] === undefined ? {} : { targetComment: record.comments[0] }) }), Date.now());
      },
    };
  };

  /** One batch: `batch` changes submitted in one turn, awaited together (each settles when its transaction committed). */
  const runBatch = (variant: 'put' | 'alone' | 'thread' | 'dispatch'): Promise<unknown> => {
    const settled: Array<Promise<void>> = [];
    for (let i = 0; i < options.batch; i++) {
      settled.push(
        new Promise<void>((resolve, reject) => {
          const settle = (error: unknown): void => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error(String(error))));
          if (variant === 'put') {
            const key = [ref.apiKey, ref.organizationId, ref.documentId, `p${++n}`];
            const record = { userId: 'u1', status: 'online', at: Date.now() };
            store.transactionGrouped({ single: true, write: () => void threads.putSync(key, record), settle });
          } else {
            const change = thread(variant !== 'alone');
            store.transactionGrouped({ write: change.write, bounded: change.bounded, settle });
          }
        }),
      );
    }
    const all = Promise.all(settled);
    if (variant !== 'dispatch') return all;
    return all.then(async () => {
      pending += options.batch;
      while (pending >= DISPATCH_BATCH) {
        const events = await outbox.claim({ limit: DISPATCH_BATCH, leaseMs: 30_000, now: Date.now() });
        await store.transaction((tx) => outbox.ackIn(tx, events.map((event) => event.seq)));
        pending -= events.length;
      }
    });
  };
  let pending = 0;

  const figures: Figure[] = [];
  try {
    for (const [variant, bench] of [
      ['put', 'REST commit floor: one put'],
      ['alone', 'REST commit floor: thread alone'],
      ['thread', 'REST commit floor: thread + event'],
      ['dispatch', 'REST commit floor: thread + event + dispatch'],
    ] as const) {
      for (let i = 0; i < options.batches; i++) await runBatch(variant);
      const before = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < options.batches; i++) await runBatch(variant);
      const cpu = process.cpuUsage(before);
      const changes = options.batch * options.batches;
      const seconds = (performance.now() - started) / 1000;
      const detail = { batch: options.batch, batches: options.batches, changesPerSecond: changes / seconds, systemMicrosPerChange: cpu.system / changes };
      figures.push({ bench, metric: 'CPU / change', unit: 'µs', server: 'plait', value: (cpu.user + cpu.system) / changes, better: 'lower', detail });
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}
