import t from 'tap';
import { keyFits, tooDeep } from '../src/limits.js';
import { DB } from '../src/store/keys.js';
import { openStore } from './helpers/store.js';

t.test('tooDeep: undefined up to the limit, the first too-deep place past it', (t) => {
  // depth counts containers: {a: {b: 1}} holds two levels.
  t.equal(tooDeep({ a: { b: 1 } }, 2), undefined);
  t.equal(tooDeep({ a: { b: {} } }, 2), 'data.a.b');
  t.equal(tooDeep({ a: [1, [2]] }, 2), 'data.a[1]');
  t.equal(tooDeep([[]], 1, 'x'), 'x[0]');
  t.equal(tooDeep('text', 0), undefined);
  t.equal(tooDeep(null, 0), undefined);
  t.end();
});

t.test('tooDeep names the place the walk meets first, whatever the width', (t) => {
  const wide: Record<string, unknown> = {};
  for (let i = 0; i < 1000; i++) wide[`k${i}`] = { ok: [i] };
  t.equal(tooDeep(wide, 3), undefined);
  // The walk is depth-first from the last key (a stack), so of two deep places it names the later one.
  wide['k10'] = { deep: [[1]] };
  wide['k900'] = { deeper: [[[1]]] };
  t.equal(tooDeep(wide, 3), 'data.k900.deeper[0]');
  t.end();
});

t.test('tooDeep: a "__proto__" key parsed from JSON is walked like any other', (t) => {
  const parsed = JSON.parse('{"__proto__": {"x": {"y": {}}}}') as unknown;
  t.equal(tooDeep(parsed, 3), 'data.__proto__.x.y');
  t.end();
});

const NOW_KEY = 1_763_900_000_000;

t.test('keyFits: the longest key it passes is one LMDB takes, whatever the characters; ASCII ids pass up to near the limit', async (t) => {
  const store = openStore(t.testdir());
  t.teardown(() => store.close());
  const db = store.records<number>(DB.meta);
  // Plain, below 5 (escaped as two bytes), below 28 (a leading escape byte), two and three bytes, a pair, a lone surrogate.
  const alphabet = ['a', '\u0001', '\u0010', 'é', '中', '😀', '\ud800'];
  let seed = 7;
  const random = (n: number): number => ((seed = (seed * 48271) % 2147483647), seed % n);
  const text = (n: number): string => Array.from({ length: n }, () => alphabet[random(alphabet.length)]).join('');
  let written = 0;
  for (let trial = 0; trial < 60; trial++) {
    // Grown by random characters, in chunks and then one by one, until keyFits refuses: the last key it passed is the
    // longest of this mix, the one where a bound too loose would show.
    const parts = ['', '', '', ''];
    for (const step of [50, 1]) {
      for (;;) {
        const at = random(4);
        const before = parts[at] as string;
        parts[at] = before + text(step);
        if (keyFits(parts, 1)) continue;
        parts[at] = before;
        break;
      }
    }
    const [a = '', b = '', c = '', d = ''] = parts;
    await store.transaction(() => void db.putSync([a, b, NOW_KEY, c, d], trial));
    written++;
  }
  t.equal(written, 60, 'the longest key of every trial was written');
  const ascii = (bytes: number): string => 'x'.repeat(bytes);
  t.ok(keyFits([ascii(1900), 'k', 'o', 'd'], 1), 'ASCII ids of 1,903 bytes and a number');
  t.notOk(keyFits([ascii(1970), 'k', 'o', 'd'], 1), 'past the limit');
  await t.rejects(store.transaction(() => void db.putSync([ascii(1970), 'k', NOW_KEY, 'o', 'd'], 0)), 'which LMDB refuses');
});
