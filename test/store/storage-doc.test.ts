// Tests that docs/storage.md names every LMDB database the server opens (DB in src/store/keys.ts), so the layout doc cannot fall behind.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { DB } from '../../src/store/keys.js';

t.test('docs/storage.md has a row for every database in DB', async (t) => {
  const doc = readFileSync(new URL('../../docs/storage.md', import.meta.url), 'utf8');
  const rows = new Set([...doc.matchAll(/^\| `([a-z-]+)`/gm)].map((match) => match[1]));
  for (const [name, db] of Object.entries(DB)) t.ok(rows.has(db), `DB.${name} ('${db}') has a row`);
});
