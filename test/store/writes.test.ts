// Tests that every LMDB write transaction outside src/store goes through Store.transaction or Store.transactionGrouped.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { readSources } from '../helpers/import-graph.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** lmdb-js calls that open a write transaction of their own, bypassing the rollback and the WriteTx of src/store/env.ts. */
const RAW = /\.(childTransaction|transactionSync|transactionAsync|ifNoExists|ifVersion)\(|(?<!store)\.transaction\(/;

t.test('no file outside src/store opens an LMDB write transaction itself', async (t) => {
  const offenders = readSources(root, 'src')
    .filter((file) => !file.path.startsWith('src/store/'))
    .flatMap((file) => file.text.split('\n').map((line, i) => ({ where: `${file.path}:${i + 1}`, line })))
    .filter(({ line }) => !line.trim().startsWith('//') && !line.trim().startsWith('*') && RAW.test(line))
    .map(({ where, line }) => `${where}: ${line.trim()}`);
  t.same(offenders, [], 'writes go through Store.transaction / transactionGrouped');
});

t.test('the check sees the calls it forbids', async (t) => {
  t.ok(RAW.test('    await this.db.transaction(() => {'), "a database's own transaction (auth/user-tokens.ts before)");
  t.ok(RAW.test('    return this.store.root.childTransaction(body);'), 'childTransaction on the root (DirectoryDb.write before)');
  t.notOk(RAW.test('    await this.store.transaction(() => {'), 'Store.transaction is the way');
  t.notOk(RAW.test('    await store.transaction(() => {'));
});
