import t from 'tap';
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
  t.throws(() => Store.open(dir), { message: /schema version 2, this server reads version 1/ });
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
