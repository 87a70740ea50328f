import t from 'tap';
import { join } from 'node:path';
import { open } from 'lmdb';
import { Store, StoreError } from '../../src/store/env.js';
import { DB, SCHEMA_VERSION } from '../../src/store/keys.js';

t.test('a fresh data directory is stamped with the schema version', async (t) => {
  const dir = t.testdir();
  const store = Store.open(dir);
  t.equal(store.records<number>(DB.meta).get('schemaVersion'), SCHEMA_VERSION);
  await store.close();
});

t.test('a data directory with another schema version is refused with a message saying what to do', async (t) => {
  const dir = t.testdir();
  const store = Store.open(dir);
  await store.records<number>(DB.meta).put('schemaVersion', SCHEMA_VERSION + 1);
  await store.close();
  t.throws(() => Store.open(dir), StoreError);
  t.throws(() => Store.open(dir), { message: new RegExp(`schema version ${SCHEMA_VERSION + 1}, this server reads version ${SCHEMA_VERSION}`) });
});

t.test('a version-2 directory (threads keyed by annotation id) opens and is re-stamped', async (t) => {
  const dir = t.testdir();
  const old = Store.open(dir);
  await old.records<number>(DB.meta).put('schemaVersion', 2);
  await old.close();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  t.equal(store.records<number>(DB.meta).get('schemaVersion'), SCHEMA_VERSION, 're-stamped: a build that reads only version 2 now refuses it');
});

t.test('a version-1 directory (msgpackr inline records) opens, reads as it was written, and is re-stamped', async (t) => {
  const dir = t.testdir();
  // Written as builds stamped 1 wrote: lmdb-js's default msgpack encoder, which defines records inline.
  const old = open({ path: join(dir, 'db'), maxDbs: 64 });
  await old.openDB<unknown, string>({ name: DB.meta, encoding: 'msgpack' }).put('schemaVersion', 1);
  const thread = { annotationId: 'a1', comments: [{ commentId: 1, from: { userId: 'u1' } }], status: { id: 'OPEN' } };
  await old.openDB<unknown, string[]>({ name: DB.annotations, encoding: 'msgpack' }).put(['k', 'o', 'd', 'a1'], thread);
  await old.close();
  const store = Store.open(dir);
  t.teardown(() => store.close());
  t.same(store.records<unknown>(DB.annotations).get(['k', 'o', 'd', 'a1']), thread, 'the old record reads back whole');
  t.equal(store.records<number>(DB.meta).get('schemaVersion'), SCHEMA_VERSION, 're-stamped: builds that read only version 1 now refuse it');
});

t.test('records are written as plain msgpack maps and read back as plain objects', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const db = store.records<unknown>(DB.annotations);
  await store.transaction(() => db.putSync(['k', 'o', 'd', 'a1'], { annotationId: 'a1', from: { userId: 'u1' } }));
  const first = db.getBinary(['k', 'o', 'd', 'a1'])?.[0] ?? 0;
  t.ok((first >= 0x80 && first <= 0x8f) || first === 0xde || first === 0xdf, `a msgpack map, not a record definition (got 0x${first.toString(16)})`);
  const read = db.get(['k', 'o', 'd', 'a1']);
  t.same(read, { annotationId: 'a1', from: { userId: 'u1' } });
  t.equal(Object.getPrototypeOf(read), Object.prototype, 'an object, not a Map');
});

t.test('a transaction that throws writes nothing', async (t) => {
  const store = Store.open(t.testdir());
  t.teardown(() => store.close());
  const meta = store.records<string>(DB.meta);
  await t.rejects(
    store.transaction(() => {
      meta.put('a', 'written');
      throw new Error('fail the commit');
    }),
    { message: 'fail the commit' },
  );
  t.equal(meta.get('a'), undefined);
  await store.transaction(() => {
    void meta.put('a', 'written');
  });
  t.equal(meta.get('a'), 'written');
});

t.test('a transaction on a closed store rejects instead of throwing (a timer that only catches the promise would crash)', async (t) => {
  const store = Store.open(t.testdir());
  await store.close();
  let thrown: unknown;
  let written: Promise<void> | undefined;
  try {
    written = store.transaction(() => void store.records<number>(DB.domains).put(['k'], 1));
  } catch (error) {
    thrown = error;
  }
  t.equal(thrown, undefined, 'nothing thrown at the call');
  await t.rejects(written ?? Promise.resolve(), /closed/);
});
