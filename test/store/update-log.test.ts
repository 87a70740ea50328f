// Tests the update log: group commit, persistence off, and compaction as a fast-check property with reload.
import fc from 'fast-check';
import t from 'tap';
import * as Y from 'yjs';
import { EditorDoc } from '../../src/doc/editor-doc.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { Snapshots } from '../../src/store/snapshots.js';
import { encodeLogRow } from '../../src/store/log-rows.js';
import { COMPACT_COUNT_CAP, COMPACT_SIZE_SHARE, UpdateLog, compactionDue, type DurabilityOptions } from '../../src/store/update-log.js';
import { DB } from '../../src/store/keys.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const silent = createLogger('silent');
const KEY = { apiKey: 'key', organizationId: 'org', documentId: 'doc' };
const options: DurabilityOptions = { groupCommitMs: 0, compactAfterUpdates: 1000, compactAfterBytes: 1 << 20 };

/** An EditorDoc whose Y.Doc appends every update to `log`, as the actor wires it. */
function logged(log: UpdateLog, editorId: string): { store: EditorDoc; commits: Array<Promise<void>> } {
  const store = new EditorDoc(KEY, editorId);
  const commits: Array<Promise<void>> = [];
  store.doc.on('update', (update: Uint8Array) => {
    store.touch({ userId: 'u', sessionId: 's' }, Date.now());
    commits.push(log.append(store, update));
  });
  return { store, commits };
}

function rebuild(snapshots: Snapshots, editorId: string): Y.Doc | undefined {
  const loaded = snapshots.load('key', 'org', 'doc').find((s) => s.editorId === editorId);
  if (loaded === undefined) return undefined;
  return new EditorDoc(KEY, editorId, loaded).doc;
}

/**
 * A store that counts LMDB write transactions: the top-level lmdb-js `transaction` calls (the group commit's batches)
 * and the `childTransaction` calls made outside one (Store.transaction).
 */
function countingStore(dir: string, counted: () => void): Store {
  return Store.open(dir, {
    transactions: (root) => {
      let depth = 0;
      return {
        transaction: <T>(body: () => T): Promise<T> => {
          counted();
          return root.transaction(() => {
            depth++;
            try {
              return body();
            } finally {
              depth--;
            }
          });
        },
        childTransaction: <T>(body: () => T): Promise<T> => {
          if (depth === 0) counted();
          return root.childTransaction(body);
        },
      };
    },
  });
}

t.test('appends of one event-loop turn commit in one transaction', async (t) => {
  let transactions = 0;
  const store = countingStore(t.testdir(), () => transactions++);
  t.teardown(() => store.close());
  const log = new UpdateLog(store, options, silent);
  const a = logged(log, 'a');
  const b = logged(log, 'b');
  for (let i = 0; i < 50; i++) {
    a.store.doc.getText('content').insert(0, 'x');
    b.store.doc.getArray<number>('content').push([i]);
  }
  t.equal(transactions, 0, 'nothing is written while the turn runs');
  await Promise.all([...a.commits, ...b.commits]);
  t.equal(transactions, 1, '100 appends, one transaction');
  t.equal(a.commits[0], a.commits[49], 'every append of the turn shares one commit promise');
  const snapshots = new Snapshots(store);
  t.equal(rebuild(snapshots, 'a')?.getText('content').toString(), 'x'.repeat(50));
  t.equal(rebuild(snapshots, 'b')?.getArray('content').length, 50);
});

t.test('a commit window gathers appends from several turns', async (t) => {
  let transactions = 0;
  const store = countingStore(t.testdir(), () => transactions++);
  t.teardown(() => store.close());
  const log = new UpdateLog(store, { ...options, groupCommitMs: 200 }, silent);
  const { store: editor, commits } = logged(log, 'w');
  editor.doc.getText('content').insert(0, 'one');
  await new Promise((resolve) => setImmediate(resolve));
  editor.doc.getText('content').insert(3, ' two');
  await log.flush();
  await Promise.all(commits);
  t.equal(transactions, 1, 'two turns, one transaction');
});

t.test('persistence off: appends resolve and nothing is written', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const log = new UpdateLog(null, options, silent);
  const { store: editor, commits } = logged(log, 'p');
  editor.doc.getText('content').insert(0, 'volatile');
  await Promise.all(commits);
  await log.flush();
  t.same(new Snapshots(store).load('key', 'org', 'doc'), [], 'no store, no snapshot, no log entry');
});

t.test('PERSISTENCE=false through the server: documents are served, nothing of them reaches LMDB, a restart forgets them', async (t) => {
  const documentKeys = (server: TestServer): unknown[] => {
    const store = server.server.services.store;
    return [...store.binary(DB.docUpdates).getKeys(), ...store.binary(DB.docSnapshots).getKeys(), ...store.records(DB.editorDocMeta).getKeys()];
  };
  const first = await startTestServer(t, { persistence: false });
  const credentials = await first.api.createWorkspace();
  const scope = { organizationId: 'org-p', documentId: 'doc-p' };
  t.equal((await first.api.call(credentials, '/v2/crdt/add', { ...scope, editorId: 'main', type: 'text', data: 'volatile' })).status, 200);
  const read = await first.api.call<Array<{ id: string; data: unknown }>>(credentials, '/v2/crdt/get', scope);
  t.same(read.body.result?.data.map((r) => [r.id, r.data]), [['main', 'volatile']], 'the document lives in memory');
  const second = await first.restart();
  t.same(documentKeys(second), [], 'not one update, snapshot or store record was written, even by the final snapshot of the stop');
  const after = await second.api.call(credentials, '/v2/crdt/get', scope);
  t.same(after.body.result?.data, [], 'the restarted server has no trace of the document');
  t.equal((await second.api.call(credentials, '/v2/crdt/add', { ...scope, editorId: 'main', type: 'text', data: 'again' })).status, 200, 'and REST metadata (the workspace) is still stored');
});

type Op =
  | { kind: 'insert'; client: 0 | 1; at: number; text: string }
  | { kind: 'delete'; client: 0 | 1; at: number; length: number }
  | { kind: 'exchange' }
  | { kind: 'flush' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), client: fc.constantFrom(0 as const, 1 as const), at: fc.nat(), text: fc.string({ minLength: 1, maxLength: 6 }) }),
  fc.record({ kind: fc.constant('delete' as const), client: fc.constantFrom(0 as const, 1 as const), at: fc.nat(), length: fc.integer({ min: 1, max: 4 }) }),
  fc.constant({ kind: 'exchange' as const }),
  fc.constant({ kind: 'flush' as const }),
);

t.test('compaction: random edits give the same state before and after snapshot + truncation, and after reload', async (t) => {
  const dir = t.testdir();
  let store = Store.open(dir);
  const expected = new Map<string, string>();
  let run = 0;
  let compactedOnTheWay = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 8, maxLength: 40 }), fc.integer({ min: 1, max: 6 }), async (ops, compactAfterUpdates) => {
      const editorId = `run-${run++}`;
      const log = new UpdateLog(store, { groupCommitMs: 0, compactAfterUpdates, compactAfterBytes: 1 << 20 }, silent);
      const server = logged(log, editorId);
      // Two clients editing concurrently; each sends its updates to the server, which logs what it integrates.
      const clients = [new Y.Doc(), new Y.Doc()];
      for (const client of clients) client.on('update', (update: Uint8Array) => Y.applyUpdate(server.store.doc, update));
      const snapshots = new Snapshots(store);
      for (const step of ops) {
        if (step.kind === 'flush') {
          await log.flush();
          const reloaded = rebuild(snapshots, editorId)?.getText('content').toString() ?? '';
          if (reloaded !== server.store.doc.getText('content').toString()) return false;
        } else if (step.kind === 'exchange') {
          const [x, y] = clients as [Y.Doc, Y.Doc];
          Y.applyUpdate(x, Y.encodeStateAsUpdate(y));
          Y.applyUpdate(y, Y.encodeStateAsUpdate(x));
        } else {
          const text = (clients[step.client] as Y.Doc).getText('content');
          if (step.kind === 'insert') text.insert(step.at % (text.length + 1), step.text);
          else if (text.length > 0) {
            const at = step.at % text.length;
            text.delete(at, Math.min(step.length, text.length - at));
          }
        }
      }
      await log.flush();
      const state = server.store.doc.getText('content').toString();
      const before = rebuild(snapshots, editorId)?.getText('content').toString() ?? '';
      if ((snapshots.load('key', 'org', 'doc').find((s) => s.editorId === editorId)?.meta.foldedSeq ?? 0) > 0) compactedOnTheWay++;
      await log.requestSnapshot(server.store);
      const after = rebuild(snapshots, editorId);
      const tail = snapshots.load('key', 'org', 'doc').find((s) => s.editorId === editorId)?.updates.length ?? 0;
      // A run whose edits all cancelled out (or never happened) stores nothing: nothing to find after reload.
      if (server.commits.length > 0) expected.set(editorId, state);
      const stateVector = (doc: Y.Doc | undefined): string => (doc === undefined ? '' : Buffer.from(Y.encodeStateVector(doc)).toString('hex'));
      return (
        (server.commits.length === 0 || (before === state && after?.getText('content').toString() === state && tail === 0)) &&
        (server.commits.length === 0 || stateVector(after) === stateVector(server.store.doc))
      );
    }),
    { numRuns: 60 },
  );
  t.ok(compactedOnTheWay > 10, `${compactedOnTheWay} runs passed the threshold and compacted while editing`);
  await store.close();
  store = Store.open(dir);
  t.teardown(() => store.close());
  const snapshots = new Snapshots(store);
  const missing: string[] = [];
  const differing: string[] = [];
  for (const [editorId, state] of expected) {
    const doc = rebuild(snapshots, editorId);
    if (doc === undefined) missing.push(editorId);
    else if (doc.getText('content').toString() !== state) differing.push(editorId);
  }
  t.ok(expected.size > 30, `${expected.size} of 60 runs logged updates`);
  t.same(missing, [], 'every store that logged an update is found after reopening the store');
  t.same(differing, [], 'and each holds the same text');
});

t.test("a commit writes one log row per store: a batch of its appends, under the last one's sequence number", async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const log = new UpdateLog(store, options, silent);
  const a = logged(log, 'a');
  for (let i = 0; i < 30; i++) a.store.doc.getText('content').insert(i, String(i % 10));
  await Promise.all(a.commits);
  const range = { start: ['key', 'org', 'doc', 'a'], end: ['key', 'org', 'doc', 'a', Number.MAX_SAFE_INTEGER] };
  t.same([...store.binary(DB.docUpdates).getKeys(range)], [['key', 'org', 'doc', 'a', 29]], '30 appends of one commit: one row, at sequence 29');
  a.store.doc.getText('content').insert(0, '>');
  await Promise.all(a.commits);
  t.equal([...store.binary(DB.docUpdates).getKeys(range)].length, 2, 'a commit of one append writes that update as its row');
  const snapshots = new Snapshots(store);
  const loaded = snapshots.load('key', 'org', 'doc').find((s) => s.editorId === 'a');
  t.equal(loaded?.updates.length, 31, 'a load reads back every update of the batch');
  t.equal(loaded?.nextSeq, 31, 'and continues the sequence after the last row');
  t.equal(rebuild(snapshots, 'a')?.getText('content').toString(), `>${'0123456789'.repeat(3)}`, 'the same text rebuilt');
});

t.test('rows written one update each (before batches) and batch rows load together', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const source = new Y.Doc();
  const updates: Uint8Array[] = [];
  source.on('update', (update: Uint8Array) => updates.push(update));
  for (let i = 0; i < 5; i++) source.getText('content').insert(i, String(i));
  const id = ['key', 'org', 'doc', 'old'] as const;
  await store.transaction(() => {
    void store.binary(DB.docUpdates).put([...id, 0], updates[0] as Uint8Array);
    void store.binary(DB.docUpdates).put([...id, 1], updates[1] as Uint8Array);
    void store.binary(DB.docUpdates).put([...id, 4], encodeLogRow(updates.slice(2)));
    void store.records<unknown>(DB.editorDocMeta).put([...id], { type: 'text', contentKey: 'content', lastUpdate: 0, lastUpdatedBy: 'u', sessionId: 's', foldedSeq: 0 });
  });
  const snapshots = new Snapshots(store);
  t.equal(snapshots.load('key', 'org', 'doc').find((s) => s.editorId === 'old')?.updates.length, 5);
  t.equal(rebuild(snapshots, 'old')?.getText('content').toString(), '01234');
});

t.test('compaction: a count alone takes a snapshot only once the log holds a quarter of the last snapshot', (t) => {
  const limits = { compactAfterUpdates: 10, compactAfterBytes: 1000 };
  const due = (logCount: number, logBytes: number, snapshotBytes: number): boolean => compactionDue({ logCount, logBytes, snapshotBytes }, limits);
  t.equal(due(10, 100, 0), false, 'at the count: not yet');
  t.equal(due(11, 11, 0), true, 'past the count with no snapshot yet');
  t.equal(due(11, 99, 400), false, 'past the count, log below a quarter of the snapshot');
  t.equal(due(11, 100, 400), true, 'past the count, log at a quarter of the snapshot');
  t.equal(due(10 * COMPACT_COUNT_CAP, 20, 100_000), false, 'at the count cap: not yet');
  t.equal(due(10 * COMPACT_COUNT_CAP + 1, 20, 100_000), true, 'past the count cap whatever the sizes');
  t.equal(due(1, 1001, 4004), true, 'past COMPACT_AFTER_BYTES with a quarter of the snapshot');
  t.equal(due(1, 1001, 0), true, 'past COMPACT_AFTER_BYTES with no snapshot yet');
  t.equal(due(1, 1001, 4005), false, 'past COMPACT_AFTER_BYTES, log below a quarter of the snapshot: not yet');
  t.equal(due(1, 25_000, 100_000), true, 'a large store: once the log holds a quarter of it, whatever the count');
  t.equal(COMPACT_SIZE_SHARE, 4);
  t.end();
});

t.test('large updates to a large store: the bytes encoded for snapshots stay within four times the bytes logged', async (t) => {
  // Before, each update past COMPACT_AFTER_BYTES took a snapshot of the whole store: a client sending 16 MiB frames
  // had a store of n frames encoded at each, n² in all (bench/README.md, "Noisy neighbours, probed from outside").
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const log = new UpdateLog(store, { groupCommitMs: 0, compactAfterUpdates: 1000, compactAfterBytes: 1024 }, silent);
  const a = logged(log, 'a');
  const text = a.store.doc.getText('content');
  let logged_ = 0;
  let encoded = 0;
  let snapshots = 0;
  for (let i = 0; i < 40; i++) {
    const before = a.store.snapshotBytes;
    const logBefore = a.store.logBytes;
    text.insert(text.length, String(i % 10).repeat(2000));
    await Promise.all(a.commits);
    logged_ += 2000;
    if (a.store.logBytes < logBefore || a.store.snapshotBytes !== before) {
      snapshots++;
      encoded += a.store.snapshotBytes;
    }
  }
  t.ok(snapshots >= 3 && snapshots <= 20, `a snapshot every few updates as the store grows, not at each (${snapshots} in 40)`);
  t.ok(encoded <= COMPACT_SIZE_SHARE * logged_ + 2 * 2000 * 40, `encoded ${encoded} bytes for ${logged_} logged`);
  const reloaded = new Snapshots(store).load('key', 'org', 'doc').find((s) => s.editorId === 'a');
  t.ok(reloaded !== undefined);
  t.equal(rebuild(new Snapshots(store), 'a')?.getText('content').toString(), text.toString(), 'the reload holds everything');
});

t.test('compaction of a large store waits for its log to reach a quarter of the snapshot; the reload is whole', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const log = new UpdateLog(store, { groupCommitMs: 0, compactAfterUpdates: 10, compactAfterBytes: 1 << 20 }, silent);
  const a = logged(log, 'a');
  const text = a.store.doc.getText('content');
  text.insert(0, 'y'.repeat(4000));
  await log.requestSnapshot(a.store);
  t.ok(a.store.snapshotBytes > 4000, `the snapshot's size is kept (${a.store.snapshotBytes} bytes)`);
  const snapshots = new Snapshots(store);
  const folded = (): number => snapshots.load('key', 'org', 'doc').find((s) => s.editorId === 'a')?.meta.foldedSeq ?? -1;
  const first = folded();
  // Single characters: ~20 log bytes each, so the 11th is past the count but far below a quarter of ~4 KB.
  for (let i = 0; i < 20; i++) {
    text.insert(i, 'z');
    await Promise.all(a.commits);
  }
  t.equal(folded(), first, 'no snapshot at 20 small updates after a ~4 KB snapshot');
  t.ok(a.store.logCount >= 20 && a.store.logBytes * COMPACT_SIZE_SHARE < a.store.snapshotBytes, 'the log keeps them');
  text.insert(0, 'w'.repeat(1100));
  await Promise.all(a.commits);
  t.ok(folded() > first, 'a snapshot once the log passed a quarter of it');
  t.equal(a.store.logCount, 0);
  t.equal(rebuild(snapshots, 'a')?.getText('content').toString(), text.toString(), 'the reload holds everything');
});
