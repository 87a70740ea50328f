// Tests document migration over more rows than one write moves: bounded writes, every row moved once, a job stopped between two writes finishing when run again, and its documents held until then.
import t, { type Test } from 'tap';
import * as Y from 'yjs';
import { loadConfig } from '../../src/config.js';
import { DocumentMigrations, MIGRATION_JOB, ROWS_PER_MOVE } from '../../src/doc/migration.js';
import { DocumentActors } from '../../src/doc/registry.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/env.js';
import { DB, KEY_END } from '../../src/store/keys.js';
import { threadIdKey, threadTimeKey } from '../../src/store/thread-times.js';
import { Directory } from '../../src/tenant/directory.js';
import { DOCUMENT_DATABASES } from '../../src/tenant/directory/data-owners.js';
import { ITEMS_PER_WRITE } from '../../src/tenant/directory/db.js';
import { Jobs, type JobRecord } from '../../src/tenant/jobs.js';
import { FakeHub } from '../helpers/fake-peer.js';
import { countingTransactions } from '../helpers/store.js';

const KEY = 'key1';
const ORG = 'org1';
const OLD = 'old-doc';
const NEW = 'new-doc';
/** More of each than one write holds: updates, threads (3 rows each with their index rows) and grants. */
const UPDATES = ROWS_PER_MOVE + 37;
const THREADS = Math.ceil(ROWS_PER_MOVE / 3) + 11;
const GRANTS = ITEMS_PER_WRITE + 9;

/** A directory on a real store holding OLD: its entry with GRANTS user grants, updates, threads with index rows and one row of each other kind. */
async function setup(t: Test): Promise<{ store: Store; directory: Directory; dir: string }> {
  const dir = t.testdir();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  const directory = new Directory(store, { defaultAccessType: () => 'public' });
  await directory.documents.add(KEY, ORG, [{ documentId: OLD, documentName: 'Plan' }]);
  const users = Array.from({ length: GRANTS }, (_, i) => ({ userId: `u${String(i).padStart(4, '0')}`, name: 'n' }));
  await directory.users.add(KEY, { organizationId: ORG, documentId: OLD }, users);
  await store.transaction(() => {
    // Real Yjs updates (one typed character each) on an empty snapshot: a test loads the document.
    const updates = store.binary(DB.docUpdates);
    const doc = new Y.Doc();
    let seq = 0;
    doc.on('update', (update: Uint8Array) => updates.putSync([KEY, ORG, OLD, 'main', ++seq], update));
    for (let i = 0; i < UPDATES; i++) doc.getText('content').insert(i, 'x');
    store.binary(DB.docSnapshots).putSync([KEY, ORG, OLD, 'main'], Y.encodeStateAsUpdate(new Y.Doc()));
    store.records(DB.editorDocMeta).putSync([KEY, ORG, OLD, 'main'], { type: 'text', contentKey: 'content', lastUpdate: 1, lastUpdatedBy: 'u0000', sessionId: null, foldedSeq: 1 });
    store.records(DB.liveState).putSync([KEY, ORG, OLD, 'mode'], { data: 'draw', updatedAt: 1 });
    store.records(DB.presence).putSync([KEY, ORG, OLD, 'u0000'], { userId: 'u0000', updatedAt: 1 });
    store.records(DB.recordings).putSync([KEY, ORG, OLD, 'r1'], { documentId: OLD, annotationId: 'r1' });
    for (let i = 0; i < THREADS; i++) {
      const thread = { annotationId: `a${String(i).padStart(4, '0')}`, lastUpdated: 1000 + i };
      store.records(DB.annotations).putSync([KEY, ORG, OLD, i + 1], thread);
      store.records(DB.annotationTimes).putSync(threadTimeKey(KEY, ORG, OLD, thread), { row: i + 1 });
      store.records(DB.annotationIds).putSync(threadIdKey(KEY, ORG, OLD, thread.annotationId), i + 1);
    }
  });
  return { store, directory, dir };
}

/**
 * Migrations on `store` with real jobs (a new pair is what a restart builds); without `actors` no actor holds a
 * document, with them the migrations hold part-moved documents from construction as a server does.
 */
function migrations(store: Store, directory: Directory, actors?: DocumentActors): Jobs {
  const jobs = new Jobs(store, createLogger('error'));
  new DocumentMigrations({
    store,
    documents: actors ?? { exclusively: (_keys, _code, _reason, work) => work() },
    holdPartMovedAtStart: actors !== undefined,
    directory: {
      knows: (apiKey, organizationId, documentId) => directory.documents.find(apiKey, organizationId, documentId) !== undefined,
      rekey: (apiKey, organizationId, documentId, newDocumentId) => directory.documents.rekey(apiKey, organizationId, documentId, newDocumentId),
    },
    jobs,
    databases: DOCUMENT_DATABASES,
  });
  return jobs;
}

/** Every row of the organization that names `documentId` (data, thread indexes, directory), as JSON key => value. */
function rowsOf(store: Store, documentId: string): Map<string, string> {
  const rows = new Map<string, string>();
  const names = [...DOCUMENT_DATABASES, DB.annotationTimes, DB.annotationIds];
  for (const name of names) {
    const db = name === DB.docUpdates || name === DB.docSnapshots ? store.binary(name) : store.records<unknown>(name);
    for (const { key, value } of db.getRange({ start: [KEY, ORG], end: [KEY, ORG, KEY_END] })) {
      if ((key as unknown[]).includes(documentId)) rows.set(JSON.stringify([name, key]), JSON.stringify(value));
    }
  }
  for (const key of store.records<unknown>(DB.directory).getKeys({ start: [KEY], end: [KEY, KEY_END] })) {
    // The entry's record changes (id, lastUpdated): its key and the grants' keys are what must move.
    if ((key as unknown[]).includes(documentId)) rows.set(JSON.stringify([DB.directory, key]), '');
  }
  return rows;
}

/** `rows` as they read once moved to NEW. */
function renamed(rows: Map<string, string>): Map<string, string> {
  const rename = (text: string): string => text.replaceAll(`"${OLD}"`, `"${NEW}"`);
  return new Map(Array.from(rows, ([key, value]) => [rename(key), rename(value)]));
}

const jobOf = (store: Store, jobId: string): JobRecord | undefined => store.records<JobRecord>(DB.jobs).get([KEY, jobId]);

t.test('a document with more rows than one write holds moves in bounded writes, every row and grant with it', async (t) => {
  const { store, directory } = await setup(t);
  const before = rowsOf(store, OLD);
  t.ok(before.size > 2 * ROWS_PER_MOVE, `the document spans several writes (${before.size} rows)`);
  const jobs = migrations(store, directory);

  const { transactions, result: job } = await countingTransactions(store, async () => {
    const submitted = await jobs.submit(KEY, MIGRATION_JOB, { organizationId: ORG, documentId: OLD, newDocumentId: NEW });
    await jobs.idle();
    return jobOf(store, submitted.jobId);
  });
  t.equal(job?.status, 'completed', job?.error ?? 'the job completed');
  const moves = Math.ceil(UPDATES / ROWS_PER_MOVE) + Math.ceil((THREADS * 3) / ROWS_PER_MOVE) + Math.ceil(GRANTS / ITEMS_PER_WRITE);
  t.ok(transactions >= moves, `bounded writes (${transactions} transactions, at least ${moves})`);
  t.same(rowsOf(store, OLD), new Map(), 'nothing is left under the old id');
  t.same(rowsOf(store, NEW), renamed(before), 'every row, index row and grant is under the new id, once, unchanged but for the id');
  t.equal(directory.documents.find(KEY, ORG, NEW)?.documentName, 'Plan', 'the directory entry moved');
});

/**
 * Submits the migration and crashes it once a write has put rows under the new id: no later transaction commits (each
 * never settles). Answers the job's id once the crash has come, the store's own transaction put back.
 */
async function crashAfterFirstMove(store: Store, jobs: Jobs): Promise<string> {
  const transaction = store.transaction.bind(store);
  let crashed = (): void => undefined;
  const crash = new Promise<void>((resolve) => (crashed = resolve));
  let down = false;
  store.transaction = (async (body) => {
    if (down) return new Promise(() => undefined);
    const answer = await transaction(body);
    if (rowsOf(store, NEW).size > 0) {
      down = true;
      crashed();
    }
    return answer;
  }) as typeof store.transaction;
  const submitted = await jobs.submit(KEY, MIGRATION_JOB, { organizationId: ORG, documentId: OLD, newDocumentId: NEW });
  await crash;
  store.transaction = transaction;
  return submitted.jobId;
}

t.test('a migration stopped after its first write finishes when run again: every row moved once, none left', async (t) => {
  const { store, directory } = await setup(t);
  const before = rowsOf(store, OLD);
  const jobId = await crashAfterFirstMove(store, migrations(store, directory));
  t.equal(jobOf(store, jobId)?.status, 'in_progress', 'the crash left the job in progress');
  const left = rowsOf(store, OLD).size;
  t.ok(left > 0 && rowsOf(store, NEW).size > 0, `the first write moved part of the document (${left} of ${before.size} rows left)`);

  // The next start: new jobs and migrations on the same store resume the job.
  const restarted = migrations(store, directory);
  t.equal(await restarted.resume({ full: true }), 1, 'the job runs again');
  await restarted.idle();
  const job = jobOf(store, jobId);
  t.equal(job?.status, 'completed', job?.error ?? 'the job completed');
  t.same(rowsOf(store, OLD), new Map(), 'nothing is left under the old id');
  t.same(rowsOf(store, NEW), renamed(before), 'every row, index row and grant moved exactly once');
  t.equal(directory.documents.find(KEY, ORG, OLD), undefined);
  t.equal(directory.documents.find(KEY, ORG, NEW)?.documentName, 'Plan', 'the directory entry moved last');
});

t.test('after a crash part-way both ids are held from start: a reader that comes before the job re-runs waits for it', async (t) => {
  const { store, directory, dir } = await setup(t);
  const jobId = await crashAfterFirstMove(store, migrations(store, directory));
  const config = loadConfig({}, [], { dataDir: dir, groupCommitMs: 0 });
  const actors = new DocumentActors(config, store, createLogger('silent'), new FakeHub());
  const restarted = migrations(store, directory, actors);
  // As a connection or REST call before the worker's first scan: each reads what is left under the old id when it gets the document.
  const reads = [OLD, NEW].map((documentId) => actors.use({ apiKey: KEY, organizationId: ORG, documentId }, () => rowsOf(store, OLD).size));
  await restarted.resume({ full: true });
  await restarted.idle();
  t.equal(jobOf(store, jobId)?.status, 'completed');
  t.same(await Promise.all(reads), [0, 0], 'neither id was loaded before the job had moved every row');
  await actors.shutdown();
});
