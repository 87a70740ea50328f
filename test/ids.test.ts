import t from 'tap';
import { randomBase62, timeOrderedBase62, timeOrderedHex } from '../src/ids.js';

t.test('randomBase62: the length asked, only [A-Za-z0-9], no repeat over many pool refills', (t) => {
  const seen = new Set<string>();
  const letters = new Set<string>();
  for (let i = 0; i < 5000; i++) {
    const id = randomBase62(20);
    if (!/^[A-Za-z0-9]{20}$/.test(id)) t.fail(`not base62: ${id}`);
    seen.add(id);
    for (const c of id) letters.add(c);
  }
  t.equal(seen.size, 5000, 'every id distinct');
  t.equal(letters.size, 62, 'every character of the alphabet appears');
  t.end();
});

t.test('timeOrderedHex: 32 hex digits, the time first, so later ids sort after', (t) => {
  const a = timeOrderedHex(1_795_000_000_000);
  const b = timeOrderedHex(1_795_000_000_001);
  t.match(a, /^[0-9a-f]{32}$/);
  t.equal(a.slice(0, 12), (1_795_000_000_000).toString(16).padStart(12, '0'));
  t.ok(a < b, 'a later millisecond sorts after');
  const sameMs = new Set(Array.from({ length: 1000 }, () => timeOrderedHex(5)));
  t.equal(sameMs.size, 1000, 'ids of one millisecond differ in their random part');
  t.equal(timeOrderedHex(0).slice(0, 12), '000000000000');
  t.end();
});

t.test('timeOrderedBase62: [0-9A-Za-z] of the length asked, 8 of the time first, so later ids sort after', (t) => {
  const a = timeOrderedBase62(1_795_000_000_000, 20);
  const b = timeOrderedBase62(1_795_000_000_001, 20);
  const later = timeOrderedBase62(1_795_000_000_000 + 62 ** 3, 20);
  t.match(a, /^[0-9A-Za-z]{20}$/);
  t.ok(a < b && b < later, 'a later millisecond sorts after, as LMDB orders the keys (bytes)');
  t.ok(Buffer.compare(Buffer.from(a), Buffer.from(later)) < 0, 'in byte order too');
  t.equal(timeOrderedBase62(0, 20).slice(0, 8), '00000000');
  t.equal(timeOrderedBase62(61, 20).slice(0, 8), '0000000z');
  t.equal(timeOrderedBase62(62, 20).slice(0, 8), '00000010');
  const sameMs = new Set(Array.from({ length: 1000 }, () => timeOrderedBase62(5, 20)));
  t.equal(sameMs.size, 1000, 'ids of one millisecond differ in their random part');
  t.end();
});
