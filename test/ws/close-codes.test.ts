// Tests that docs/protocol.md's close-code table and CLOSE (src/errors.ts) name the same codes, as the error catalog's doc is checked.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { CLOSE } from '../../src/errors.js';

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');

t.test('every close code Plait sends has its row in docs/protocol.md, under its name, and no row names another', async (t) => {
  const section = doc.split('## Close codes')[1]?.split('\n## ')[0] ?? '';
  const rows = [...section.matchAll(/^\| (\d{4}) \| ([A-Z_]+) \|/gm)].map((match) => [match[2], Number(match[1])] as const);
  t.ok(rows.length > 0, 'the table was found');
  t.same(Object.fromEntries(rows), { ...CLOSE }, 'the table and CLOSE agree, code for code');
  t.equal(rows.length, Object.keys(CLOSE).length, 'no code has two rows');
});
